"""Does GRPO with the judge's rewards teach anything? A small model built offline, on stage matmul
(the default) or on stage general's shortest tasks, on the GPU machine (no downloads).

  python eval/train_learning.py --out DIR [--stage matmul|general] [--sft-steps 3000|300] [--grpo-steps 30]
                                [--grpo-lr 3e-5] [--samples 8]

Resumable: each phase below is skipped when DIR already holds its result (GRPO resumes from its
last checkpoint), so a run longer than one device command is the same command repeated.

Stage matmul: the warm start is `cudal2 train --stage sft` with `train.sft_family = "tiled"` (the
short mma.sync family: one text per point for every shape, about 4 KB, so a small model can learn
to write it; an sm80 render is 3.4-3.8k tokens), two points per training shape of the grid; GRPO
then runs on six mid-size training shapes (TRAIN_MM), and the held-out shape (HELD_OUT_MM, in the
grid's held-out split) is measured before and after. The tiled points differ in speed by shape,
so a group has a spread beyond verified or not. Stage general: as below.

1. A byte-level BPE tokenizer is trained on the chosen tasks' prompts and reference kernels, and a
   4-layer Llama (hidden 256) is initialised with seeded random weights.
2. Warm start: `cudal2.rl.train.sft` on the six training tasks' reference solutions (the stage's
   own verified kernels; prompts from the same builder as `cudal2 train`). Not to perfection, on purpose:
   a model that copies every reference perfectly gives every completion of a group the same
   reward, and GRPO learns nothing from a group without spread.
3. Before: `--samples` completions per task (sampled as GRPO samples its groups: temperature 1,
   top-k 50) scored by the `RewardService` (the task judge in its worker): verified fraction and mean reward, for the six
   training tasks and for a held-out task of the same kind (ew-relu-squared).
4. `cudal2.rl.train.grpo` on stage general, the same six tasks, `--grpo-steps` steps.
5. After: step 3 again, from the GRPO model. The reward curve goes to DIR/grpo/reward.png.

Nothing is asserted: a measurement for eval/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudal2.config import Config  # noqa: E402
from cudal2.rl.service import RewardService  # noqa: E402
from cudal2.kernels.family import get_family  # noqa: E402
from cudal2.problem import Problem  # noqa: E402
from cudal2.rl.tasks import general_tasks, matmul_tasks, prompter  # noqa: E402
from cudal2.rl.train import grpo, plot, reference_rows, sft, step_metrics  # noqa: E402

TRAIN = ["ew-relu", "ew-square", "ew-tanh", "ew-sigmoid", "ew-exp", "ew-leaky-relu"]
HELD_OUT = ["ew-relu-squared"]
# Mid-size shapes of the grid's training split (judged in well under a second each), and one of its
# held-out split: tile choice matters at all of them.
TRAIN_MM = ["matmul-256x4096x1024", "matmul-512x2048x1024", "matmul-1024x1024x1024", "matmul-1024x256x4096",
            "matmul-512x512x4096", "matmul-1024x2048x512"]
HELD_OUT_MM = ["matmul-512x1024x2048"]
REFS = ROOT / "cudal2" / "rl" / "references"


def small_model(out: Path, corpus: list[str], hidden: int = 256, layers: int = 4, vocab: int = 2048,
                positions: int = 2048) -> str:
    """A tokenizer trained on `corpus` and a seeded random Llama, saved as a hub-style folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from tests.llm_fixtures import CHAT_TEMPLATE, SPECIALS
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus, trainer=trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", bos_token="<|bos|>", eos_token="<|eos|>")
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=positions,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=False)
    out.mkdir(parents=True, exist_ok=True)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def tasks_by_name(stage: str) -> dict:
    """Task name (a general task id, or a matmul task id) -> Task, for the chosen stage."""
    if stage == "general":
        return {t.general: t for t in general_tasks()}
    return {t.id: t for t in matmul_tasks(Config().train.holdout_fraction) if t.id in set(TRAIN_MM + HELD_OUT_MM)}


def sample_and_score(model_dir: str, cfg: Config, svc: RewardService, n: int, stage: str, keep: Path) -> dict:
    """`n` sampled completions per training and held-out task, each scored by the judge: per task
    and per group (the model loaded once). Every completion, with its stage and reason, goes to
    `keep` (JSON lines): where a warm start breaks is the first thing to read when nothing verifies."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    dev = "cuda" if torch.cuda.is_available() else "cpu"   # cpu: a dry run of the script (rewards None)
    model = AutoModelForCausalLM.from_pretrained(model_dir).to(dev).eval()
    prompt = prompter(cfg)
    by_name = tasks_by_name(stage)
    train, held = (TRAIN, HELD_OUT) if stage == "general" else (TRAIN_MM, HELD_OUT_MM)
    out: dict = {}
    for group, names in (("train", train), ("held_out", held)):
        rows: dict = {}
        for name in names:
            # return_dict: transformers 5 returns a BatchEncoding either way; be explicit about it
            ids = tok.apply_chat_template(prompt(by_name[name]), add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)["input_ids"].to(dev)
            with torch.no_grad():
                # sampled as GRPO samples its groups (cfg.train.temperature, top_k; 0: off)
                gen = model.generate(ids, do_sample=True, temperature=cfg.train.temperature,
                                     top_k=cfg.train.top_k, max_new_tokens=cfg.train.max_completion_length,
                                     num_return_sequences=n, pad_token_id=tok.pad_token_id,
                                     eos_token_id=tok.eos_token_id)
            texts = tok.batch_decode(gen[:, ids.shape[1]:], skip_special_tokens=True)
            parts = svc.score(texts, [by_name[name].target] * n)
            with keep.open("a") as f:
                for text, p in zip(texts, parts):
                    f.write(json.dumps({"task": name, "stage": p.stage, "verified": p.verified,
                                        "reason": p.reason, "text": text}) + "\n")
            rows[name] = {"verified": sum(p.verified for p in parts) / n,
                          "compiled": sum(p.compiled for p in parts) / n,
                          "reward": sum(p.reward or 0.0 for p in parts) / n,
                          "best_speedup": max((p.speedup or 0.0 for p in parts), default=0.0),
                          "stages": dict(Counter(p.stage for p in parts))}
        rows["all"] = {k: sum(rows[x][k] for x in names) / len(names) for k in ("verified", "compiled", "reward")}
        out[group] = rows
    return out


def main(out: Path, stage: str, sft_steps: int, grpo_steps: int, samples: int, grpo_lr: float) -> None:
    """Each phase leaves its result in `out` and is skipped when run again (the device runs a
    command for at most 10 minutes: run the same command until it prints the summary)."""
    out.mkdir(parents=True, exist_ok=True)
    # A tiled render is about 1430 tokens of this tokenizer (a general reference about 600), after a
    # prompt of about 3000 (stage matmul's contract) or 1000.
    cfg = Config.load(build={"cache_dir": str(out / "cache")},
                      train={"num_generations": 4, "max_completion_length": 1600 if stage == "matmul" else 1024,
                             "save_steps": 5,   # GRPO resumes from its last checkpoint
                             "learning_rate": 1e-3,
                             # fp32 throughout: the before/after samples are drawn in fp32, so GRPO's own
                             # samples come from the same model
                             "bf16": False,
                             # top-k 50, as Hugging Face samples by default: with TRL's default (off)
                             # GRPO's groups verified far less often than the same model sampled here
                             "top_k": 50, "sft_family": "tiled",
                             # stage matmul: a 1430-token kernel sampled at temperature 1 broke somewhere
                             # in nearly every completion (99.5% token accuracy after SFT: 0% verified,
                             # 1 of 30 GRPO groups with any spread, H100 2026-11-23); at 0.7 the errors
                             # gather at the few places where renders differ (the tile constants), so a
                             # group holds different valid kernels of different speeds
                             "temperature": 0.7 if stage == "matmul" else 1.0})
    if stage == "general":
        refs = [(REFS / f"{x}.cu").read_text() for x in TRAIN + HELD_OUT]
        prompts = [m["content"] for r in reference_rows(cfg, TRAIN) for m in r["prompt"]]
        train, sft_tasks = TRAIN, TRAIN
    else:
        fam, p = get_family("tiled"), Problem(64, 64, 64)   # one text per point, whatever the shape
        refs = [fam.render(x, p) for x in fam.points()]
        prompt = prompter(cfg)
        prompts = [m["content"] for t in tasks_by_name(stage).values() for m in prompt(t)]
        train, sft_tasks = TRAIN_MM, None   # sft: the tiled renders over the grid's training split
    state = out / "summary.json"
    summary: dict = json.loads(state.read_text()) if state.exists() else {
        "stage": stage, "train_tasks": train, "held_out": HELD_OUT if stage == "general" else HELD_OUT_MM}

    def save() -> None:
        state.write_text(json.dumps(summary, indent=1))

    if not (out / "sft" / "final").exists():
        model = small_model(out / "model", refs + prompts, positions=8192 if stage == "matmul" else 2048)
        t0 = time.monotonic()
        sft(cfg, model, sft_steps, out / "sft", tasks=sft_tasks)
        summary["sft_s"] = time.monotonic() - t0
        save()
    def measure(key: str, model_dir: Path) -> None:
        if key in summary:
            return
        svc = RewardService(cfg)
        try:
            keep = out / f"{key}_samples.jsonl"
            keep.unlink(missing_ok=True)   # a phase cut short writes its samples again
            summary[key] = sample_and_score(str(model_dir), cfg, svc, samples, stage, keep)
        finally:
            svc.close()
        save()
        print(json.dumps(summary[key], indent=1), flush=True)

    measure("before", out / "sft" / "final")
    if not (out / "grpo" / "final").exists():
        t0 = time.monotonic()
        # GRPO at SFT's rate (1e-3) wrecked the model in one update on the H100 (entropy 0.12 -> 6.3 nats,
        # every later completion unparseable): policy updates take a far smaller step.
        g_cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, learning_rate=grpo_lr))
        grpo(g_cfg, str(out / "sft" / "final"), grpo_steps, out / "grpo", stage=stage, tasks=train,
             resume=(out / "grpo").exists())   # grpo closes the service it makes
        summary["grpo_s"] = summary.get("grpo_s", 0.0) + time.monotonic() - t0
        save()
    measure("after", out / "grpo" / "final")
    summary["grpo_steps"] = step_metrics(out / "grpo")
    summary["plot"] = str(plot(out / "grpo"))
    save()
    print(json.dumps({k: v for k, v in summary.items() if k != "grpo_steps"}, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--stage", choices=["matmul", "general"], default="matmul")
    # Stage matmul on the H100, 2026-11-23: 300 steps ended at 99.3-99.5% token accuracy and nothing
    # sampled verified; 800 steps (78 s, loss 0.011) gave kernels that all compiled but mixed the
    # tile constants of different points (BM from one, the grid of another): 0 of 56 verified before
    # GRPO. The copy from the first constant to the others is what is left to learn: 3000 steps.
    ap.add_argument("--sft-steps", type=int, default=None, help="default: 3000 (matmul), 300 (general)")
    ap.add_argument("--grpo-steps", type=int, default=30)
    ap.add_argument("--grpo-lr", type=float, default=3e-5)
    ap.add_argument("--samples", type=int, default=8, help="completions per task in the before/after measurement")
    a = ap.parse_args()
    sft_steps = a.sft_steps if a.sft_steps is not None else 3000 if a.stage == "matmul" else 300
    main(a.out, a.stage, sft_steps, a.grpo_steps, a.samples, a.grpo_lr)
