"""Does GRPO with the judge's rewards teach anything? A small model built offline, on stage general's
shortest tasks, on the GPU machine (no downloads).

  python eval/train_learning.py --out DIR [--sft-steps 300] [--grpo-steps 30] [--grpo-lr 3e-5] [--samples 8]

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

Nothing is asserted: a measurement for eval/README.md. Why stage general and not stage matmul: an
sm80 render is 3.4-3.8k tokens even with its comments stripped and a tokenizer trained on it,
where these references are about 600; a small model cannot be taught to write the former in the
few minutes of GPU a session has (see eval/README.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudal2.config import Config  # noqa: E402
from cudal2.rl.service import RewardService  # noqa: E402
from cudal2.rl.tasks import general_tasks, prompter  # noqa: E402
from cudal2.rl.train import grpo, plot, reference_rows, sft, step_metrics  # noqa: E402

TRAIN = ["ew-relu", "ew-square", "ew-tanh", "ew-sigmoid", "ew-exp", "ew-leaky-relu"]
HELD_OUT = ["ew-relu-squared"]
REFS = ROOT / "cudal2" / "rl" / "references"


def small_model(out: Path, corpus: list[str], hidden: int = 256, layers: int = 4) -> str:
    """A tokenizer trained on `corpus` and a seeded random Llama, saved as a hub-style folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from tests.llm_fixtures import CHAT_TEMPLATE, SPECIALS
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus, trainer=trainers.BpeTrainer(
        vocab_size=2048, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", bos_token="<|bos|>", eos_token="<|eos|>")
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=False)
    out.mkdir(parents=True, exist_ok=True)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def sample_and_score(model_dir: str, cfg: Config, svc: RewardService, n: int, max_new: int = 1024) -> dict:
    """`n` sampled completions per task of TRAIN and of HELD_OUT, each scored by the judge: per
    task and per group (the model loaded once)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).to("cuda").eval()
    prompt = prompter(cfg)
    by_name = {t.general: t for t in general_tasks()}
    out: dict = {}
    for group, names in (("train", TRAIN), ("held_out", HELD_OUT)):
        rows: dict = {}
        for name in names:
            # return_dict: transformers 5 returns a BatchEncoding either way; be explicit about it
            ids = tok.apply_chat_template(prompt(by_name[name]), add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)["input_ids"].to("cuda")
            with torch.no_grad():
                # sampled as GRPO samples its groups (cfg.train.temperature, top_k; 0: off)
                gen = model.generate(ids, do_sample=True, temperature=cfg.train.temperature,
                                     top_k=cfg.train.top_k, max_new_tokens=max_new,
                                     num_return_sequences=n, pad_token_id=tok.pad_token_id,
                                     eos_token_id=tok.eos_token_id)
            parts = svc.score(tok.batch_decode(gen[:, ids.shape[1]:], skip_special_tokens=True), [name] * n)
            rows[name] = {"verified": sum(p.verified for p in parts) / n,
                          "reward": sum(p.reward or 0.0 for p in parts) / n,
                          "stages": sorted({p.stage for p in parts})}
        rows["all"] = {k: sum(rows[x][k] for x in names) / len(names) for k in ("verified", "reward")}
        out[group] = rows
    return out


def main(out: Path, sft_steps: int, grpo_steps: int, samples: int, grpo_lr: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    refs = [(REFS / f"{x}.cu").read_text() for x in TRAIN + HELD_OUT]
    cfg = Config.load(build={"cache_dir": str(out / "cache")},
                      train={"num_generations": 4, "max_completion_length": 1024, "save_steps": 1000,
                             "learning_rate": 1e-3,
                             # fp32 throughout: the before/after samples are drawn in fp32, so GRPO's own
                             # samples come from the same model
                             "bf16": False,
                             # top-k 50, as Hugging Face samples by default: with TRL's default (off)
                             # GRPO's groups verified far less often than the same model sampled here
                             "top_k": 50})
    prompts = [m["content"] for r in reference_rows(cfg, TRAIN) for m in r["prompt"]]
    model = small_model(out / "model", refs + prompts)
    summary: dict = {"train_tasks": TRAIN, "held_out": HELD_OUT}
    t0 = time.monotonic()
    sft(cfg, model, sft_steps, out / "sft", tasks=TRAIN)
    summary["sft_s"] = time.monotonic() - t0
    svc = RewardService(cfg)
    try:
        summary["before"] = sample_and_score(str(out / "sft" / "final"), cfg, svc, samples)
        print(json.dumps(summary["before"], indent=1), flush=True)
        t0 = time.monotonic()
        # GRPO at SFT's rate (1e-3) wrecked the model in one update on the H100 (entropy 0.12 -> 6.3 nats,
        # every later completion unparseable): policy updates take a far smaller step.
        g_cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, learning_rate=grpo_lr))
        grpo(g_cfg, str(out / "sft" / "final"), grpo_steps, out / "grpo", stage="general", tasks=TRAIN, service=svc)
        summary["grpo_s"] = time.monotonic() - t0
    finally:
        svc.close()
    svc = RewardService(cfg)   # grpo closes the service it is given
    try:
        summary["after"] = sample_and_score(str(out / "grpo" / "final"), cfg, svc, samples)
    finally:
        svc.close()
    summary["grpo_steps"] = step_metrics(out / "grpo")
    summary["plot"] = str(plot(out / "grpo"))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "grpo_steps"}, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sft-steps", type=int, default=300)
    ap.add_argument("--grpo-steps", type=int, default=30)
    ap.add_argument("--grpo-lr", type=float, default=3e-5)
    ap.add_argument("--samples", type=int, default=8, help="completions per task in the before/after measurement")
    a = ap.parse_args()
    main(a.out, a.sft_steps, a.grpo_steps, a.samples, a.grpo_lr)
