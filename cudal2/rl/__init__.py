"""GRPO fine-tuning of the kernel writer (`cudal2 train`): tasks, rewards from the judge, the trainer."""
