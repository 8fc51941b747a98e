"""`cudal2 train`: warm start by rejection fine-tuning (stage sft), then GRPO with judge rewards
(stage matmul), with TRL.

Guarantees:
- prompts are `generate`'s own (`tasks.prompt`), over the training split of the matmul tasks in
  a fixed order; the held-out split is never trained on;
- `grpo` runs TRL's GRPOTrainer with the judge's reward (`trl_reward.make_reward` over a
  `RewardService`), LoRA (peft) when `[train] lora_r` > 0, vLLM generation when asked and
  installed; a checkpoint every `save_steps`, and `resume` continues from the latest one;
- `sft` fine-tunes on (prompt, verified kernel) pairs: contract v2 renders of `train.sft_family`
  (sm80, or tiled for a small model) for training shapes, the prior's best point and one other
  (verified by construction of the family, re-judged in `generate`), and the
  completions the `generate` trace recorded as verified;
- every logged step is appended to `<output>/metrics.jsonl` (TRL's reward mean and std, the
  fractions compiled and verified, the best speedup, the zero-spread group fraction);
  `plot` draws the reward curve from it.

Does not: pick hyper-parameters for a real model beyond `[train]` (see the README's commands).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from cudal2.config import Config
from cudal2.rl.tasks import Task, general_tasks, matmul_tasks, prompter

STAGES = ("sft", "matmul", "general")


def train_tasks(cfg: Config, n: int, seed: int = 0, stage: str = "matmul", only=None) -> list[Task]:
    """`n` training-split tasks of `stage` in a fixed shuffled order (repeated as needed); `only`:
    just these task ids (or general task names)."""
    pool = general_tasks() if stage == "general" else matmul_tasks(cfg.train.holdout_fraction)
    tasks = [t for t in pool if t.split == "train" and (only is None or t.id in only or t.general in only)]
    if not tasks:
        raise ValueError(f"no training-split task of stage {stage} among {sorted(only or [])}")
    random.Random(seed).shuffle(tasks)
    return [tasks[i % len(tasks)] for i in range(n)]


def _rows(cfg: Config, tasks: list[Task], device: dict | None, retriever) -> list[dict]:
    prompt = prompter(cfg, device, retriever)
    return [{"prompt": prompt(t), "task_id": t.id, **({"task": t.general} if t.general else
                                                     {"M": t.problem.M, "N": t.problem.N, "K": t.problem.K})}
            for t in tasks]


def _metrics_callback(path: Path):
    from transformers import TrainerCallback

    class Metrics(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and state.is_world_process_zero:
                with path.open("a") as f:
                    f.write(json.dumps({"step": state.global_step, **logs}) + "\n")

    return Metrics()


def _rich_progress():
    """A rich progress bar over the steps, with the latest reward and the verified fraction."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from transformers import TrainerCallback

    class RichProgress(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeRemainingColumn())
            self.bar.start()
            self.task = self.bar.add_task("training", total=state.max_steps, completed=state.global_step)

        def on_log(self, args, state, control, logs=None, **kw):
            logs = logs or {}
            parts = [f"step {state.global_step}"]
            if "reward" in logs:
                parts.append(f"reward {logs['reward']:.3f}±{logs.get('reward_std', 0):.3f}")
            if "cudal2/verified" in logs:
                parts.append(f"verified {logs['cudal2/verified']:.0%}")
            if "loss" in logs and "reward" not in logs:
                parts.append(f"loss {logs['loss']:.3f}")
            self.bar.update(self.task, completed=state.global_step, description=" · ".join(parts))

        def on_train_end(self, args, state, control, **kw):
            self.bar.stop()

    return RichProgress()


def last_checkpoint(output: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint
    return get_last_checkpoint(str(output)) if output.is_dir() else None


def _common_args(cfg: Config, output: Path, steps: int, progress: bool = False) -> dict:
    import torch
    cuda = torch.cuda.is_available()
    return dict(output_dir=str(output), max_steps=steps, learning_rate=cfg.train.learning_rate, logging_steps=1,
                save_steps=cfg.train.save_steps, report_to=[], use_cpu=not cuda,
                bf16=cfg.train.bf16 and cuda and torch.cuda.is_bf16_supported(), gradient_checkpointing=False, seed=0,
                disable_tqdm=progress)   # the rich display replaces tqdm's bar


def _callbacks(output: Path, progress: bool) -> list:
    return [_metrics_callback(output / "metrics.jsonl")] + ([_rich_progress()] if progress else [])


def grpo(cfg: Config, model: str, steps: int, output: Path, resume: bool = False, device: dict | None = None,
         retriever=None, service=None, progress: bool = False, stage: str = "matmul", tasks=None):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from cudal2.rl.service import RewardService
    from cudal2.rl.trl_reward import make_reward
    T = cfg.train
    output.mkdir(parents=True, exist_ok=True)
    ds = Dataset.from_list(_rows(cfg, train_tasks(cfg, max(1, steps * T.batch_prompts), stage=stage, only=tasks),
                                 device, retriever))
    args = GRPOConfig(**_common_args(cfg, output, steps, progress), num_generations=T.num_generations,
                      per_device_train_batch_size=T.num_generations * T.batch_prompts,
                      max_completion_length=T.max_completion_length,
                      temperature=T.temperature, top_k=T.top_k,
                      # A model that never emits EOS early in training would have every completion masked.
                      mask_truncated_completions=False, use_vllm=T.use_vllm and _has_vllm(), log_completions=False)
    peft = None
    if T.lora_r:
        from peft import LoraConfig
        peft = LoraConfig(r=T.lora_r, lora_alpha=2 * T.lora_r, target_modules="all-linear", task_type="CAUSAL_LM")
    service = service or RewardService(cfg)
    trainer = GRPOTrainer(model=model, reward_funcs=[make_reward(service)], args=args, train_dataset=ds,
                          peft_config=peft, callbacks=_callbacks(output, progress))
    try:
        trainer.train(resume_from_checkpoint=last_checkpoint(output) if resume else None)
        trainer.save_model(str(output / "final"))
    finally:
        service.close()
    return trainer


def sft_rows(cfg: Config, n: int, trace: Path | None = None, retriever=None) -> list[dict]:
    """(prompt, completion) pairs of verified kernels: v2 renders of `train.sft_family` for training
    shapes, then the verified completions of a `generate` trace (JSON lines with prompt, completion,
    ok)."""
    from cudal2.kernels.family import Limits, get_family
    fam = get_family(cfg.train.sft_family)
    prompt = prompter(cfg, retriever=retriever)
    rows = []
    rng = random.Random(1)
    for t in train_tasks(cfg, 4 * n, seed=1):
        pts = fam.valid_points(t.problem, Limits())
        if not pts:
            continue
        # The prior's best point, and one other drawn at random: a warm start that only ever saw
        # the best guess would sample it every time, and GRPO learns nothing from a group whose
        # completions are all the same kernel.
        best = max(pts, key=lambda x: fam.prior(x, t.problem, Limits()))
        others = [x for x in pts if x != best]
        messages = prompt(t)
        for params in [best] + ([rng.choice(others)] if others else []):
            rows.append({"prompt": messages, "completion": [{"role": "assistant", "content":
                                                             f"```cuda\n{fam.render(params, t.problem)}\n```"}]})
        if len(rows) >= n:
            break
    rows = rows[:n]
    if trace and trace.exists():
        for line in trace.read_text().splitlines():
            r = json.loads(line)
            if r.get("ok") and r.get("prompt") and r.get("completion"):
                rows.append({"prompt": r["prompt"], "completion": [{"role": "assistant", "content": r["completion"]}]})
    return rows


def reference_rows(cfg: Config, tasks) -> list[dict]:
    """(prompt, reference solution) pairs of stage general's training tasks named in `tasks`: the
    suite's own verified kernels (`cudal2/rl/references/`), as a warm start for that stage."""
    prompt = prompter(cfg)
    refs = Path(__file__).parent / "references"
    return [{"prompt": prompt(t), "completion": [{"role": "assistant", "content":
                                                 f"```cuda\n{(refs / f'{t.general}.cu').read_text()}\n```"}]}
            for t in general_tasks() if t.split == "train" and t.general in set(tasks)]


def sft(cfg: Config, model: str, steps: int, output: Path, resume: bool = False, trace: Path | None = None,
        retriever=None, progress: bool = False, tasks=None):
    """Warm start: on the family renders and the trace's verified completions, or (`tasks`: general
    task names) on those tasks' reference solutions."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer
    output.mkdir(parents=True, exist_ok=True)
    rows = reference_rows(cfg, tasks) if tasks else sft_rows(cfg, max(8, steps * 2), trace, retriever)
    if not rows:
        raise ValueError(f"no training rows (tasks: {tasks})")
    ds = Dataset.from_list(rows)
    # No truncation: generate's prompts are long (retrieval, contract), and a truncated example
    # loses its completion, which is all the loss is computed on.
    args = SFTConfig(**_common_args(cfg, output, steps, progress), per_device_train_batch_size=2, max_length=None)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, callbacks=_callbacks(output, progress))
    trainer.train(resume_from_checkpoint=last_checkpoint(output) if resume else None)
    trainer.save_model(str(output / "final"))
    return trainer


def _has_vllm() -> bool:
    try:
        import vllm  # noqa: F401
        return True
    except ImportError:
        return False


STEP_KEYS = ("step", "reward", "reward_std", "cudal2/compiled", "cudal2/verified", "cudal2/best_speedup",
             "cudal2/zero_spread_groups")


def step_metrics(output: Path) -> list[dict]:
    """Per logged GRPO step of the run in `output`: the reward's mean and std, the fractions that
    compiled and verified, the best speedup, the fraction of groups with zero reward spread.
    A resumed run logs again the steps after its last checkpoint: the later record of a step wins."""
    rows = [json.loads(x) for x in (output / "metrics.jsonl").read_text().splitlines() if x.strip()]
    by_step = {r["step"]: {k: r.get(k) for k in STEP_KEYS} for r in rows if "reward" in r}
    return [by_step[s] for s in sorted(by_step)]


def plot(output: Path) -> Path:
    """The reward curve (mean, with the std band) and the compiled and verified fractions, per step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = step_metrics(output)
    steps = [r["step"] for r in rows]
    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    mean = [r["reward"] for r in rows]
    std = [r["reward_std"] or 0.0 for r in rows]
    a.plot(steps, mean, label="reward mean")
    a.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], alpha=0.2)
    a.set_ylabel("reward")
    a.legend()
    for key, label in (("cudal2/compiled", "compiled"), ("cudal2/verified", "verified"),
                       ("cudal2/zero_spread_groups", "zero-spread groups")):
        b.plot(steps, [float("nan") if r[key] is None else r[key] for r in rows], label=label)
    b.set_xlabel("step")
    b.set_ylabel("fraction")
    b.legend()
    out = output / "reward.png"
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    return out
