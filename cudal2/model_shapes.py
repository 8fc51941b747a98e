"""The GEMM shapes of a Hugging Face decoder: what `cudal2 generate --model CONFIG.json --m ...` searches.

Guarantees: `layer_gemms(config)` reads a decoder's `config.json` (Llama, Mistral, Qwen2 and the
like: `hidden_size`, `intermediate_size`, `num_attention_heads`, optional `num_key_value_heads`
and `head_dim`, `vocab_size`) and returns each linear layer's (N, K) as `torch.nn.Linear` stores
its weight (out_features, in_features): the q, k, v and o projections, gate, up and down, and
the LM head; `model_problems(config, ms)` crosses them with the token counts M, dropping
duplicates, in a stable order. A missing or malformed field is a `ProblemError` naming it.

Does not: download anything (the config is a local file), or know fused layouts (a model that
fuses q/k/v or gate/up runs the fused shape; search it with --mnk).
"""

from __future__ import annotations

import json
from pathlib import Path

from cudal2.problem import Problem, ProblemError


def _field(cfg: dict, name: str, path: str, default: int | None = None) -> int:
    v = cfg.get(name, default)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise ProblemError(f"{path}: '{name}' must be a positive integer, got {v!r}")
    return v


def layer_gemms(config: str | Path) -> dict[str, tuple[int, int]]:
    path = str(config)
    try:
        cfg = json.loads(Path(config).read_text())
    except FileNotFoundError:
        raise ProblemError(f"model config not found: {path}") from None
    except (OSError, ValueError, RecursionError) as e:   # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ProblemError(f"{path}: not a readable JSON config ({e})") from None
    if not isinstance(cfg, dict):
        raise ProblemError(f"{path}: a model config is a JSON object")
    cfg = cfg.get("text_config", cfg)  # multimodal wrappers keep the decoder's fields there
    H = _field(cfg, "hidden_size", path)
    inter = _field(cfg, "intermediate_size", path)
    heads = _field(cfg, "num_attention_heads", path)
    kv = _field(cfg, "num_key_value_heads", path, heads)
    hd = _field(cfg, "head_dim", path, H // heads if H % heads == 0 else None)
    vocab = _field(cfg, "vocab_size", path)
    return {"q_proj": (heads * hd, H), "k_proj": (kv * hd, H), "v_proj": (kv * hd, H), "o_proj": (H, heads * hd),
            "gate_proj": (inter, H), "up_proj": (inter, H), "down_proj": (H, inter), "lm_head": (vocab, H)}


def model_problems(config: str | Path, ms: list[int]) -> list[Problem]:
    out: list[Problem] = []
    for M in ms:
        for N, K in layer_gemms(config).values():
            p = Problem(M, N, K)
            if p not in out:
                out.append(p)
    return out


def parse_ms(text: str) -> list[int]:
    """'1,16,128,2048' -> [1, 16, 128, 2048]."""
    try:
        ms = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ProblemError(f"--m wants a comma list of positive integers like 1,16,128,2048; got {text!r}") from None
    if not ms or any(m <= 0 for m in ms):
        raise ProblemError(f"--m wants a comma list of positive integers like 1,16,128,2048; got {text!r}")
    return ms
