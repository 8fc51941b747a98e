"""The 'hf:<model-or-path>' backend: a transformers causal LM in this process (also what
`cudal2 serve` serves).

Guarantees:
- a model folder or hub name loads once per process and device (`AutoTokenizer` +
  `AutoModelForCausalLM`), on CUDA when torch sees a GPU, else on the CPU; a local folder is
  read with `local_files_only`, and a hub name follows transformers' own rules, so
  HF_HUB_OFFLINE=1 means the local cache or an error, never a download;
- the prompt is the tokenizer's chat template with the generation prompt added, or, for a
  tokenizer without one, the messages joined as "role: content" lines ending in "assistant:";
- only the new tokens are decoded, up to the first end-of-sequence token, special tokens
  dropped; `generate` also reports token counts and why each completion stopped;
- temperature 0 is greedy (one run, its text repeated n times: greedy runs are identical and
  transformers refuses n > 1 without sampling); otherwise n samples in one batched call;
- one model generates for one caller at a time (a lock per model), so threads of
  `cudal2 serve` can share it.

Does not: evict loaded models (a process that loads many holds them all); set top_p or top_k
(the model's generation_config decides, as vLLM does); truncate prompts longer than the
model's context; run on several GPUs.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from cudal2.llm.base import LLMError, describe, require, validate


@dataclass
class Generation:
    texts: list[str]
    prompt_tokens: int
    completion_tokens: list[int]     # per text, end-of-sequence token included
    finish_reasons: list[str]        # per text: "stop" (end of sequence) or "length" (max_tokens)


@dataclass
class _Loaded:
    tokenizer: Any
    model: Any
    device: str
    eos_ids: set[int]
    pad_id: int
    lock: threading.Lock


_LOADED: dict[tuple[str, str], _Loaded] = {}
_LOAD_LOCK = threading.Lock()


class HFBackend:
    def __init__(self, model: str):
        self.model = model
        self.name = f"hf:{model}"
        self._m = _load(model)

    @property
    def device(self) -> str:
        return self._m.device

    def propose(self, messages: list[dict[str, str]], n: int, temperature: float,
                max_tokens: int) -> list[str]:
        return self.generate(messages, n, temperature, max_tokens).texts

    def generate(self, messages: list[dict[str, str]], n: int, temperature: float,
                 max_tokens: int) -> Generation:
        validate(messages, n, temperature, max_tokens)
        torch = require("torch", "hf")
        m = self._m
        prompt, templated = render_prompt(m.tokenizer, messages)
        # A chat template writes its own BOS; adding another would shift what the model saw in training.
        enc = m.tokenizer(prompt, return_tensors="pt", add_special_tokens=not templated)
        ids = enc["input_ids"].to(m.device)
        mask = enc["attention_mask"].to(m.device)
        greedy = temperature == 0
        sampling = {"do_sample": False} if greedy else {"do_sample": True, "temperature": float(temperature)}
        try:
            with m.lock, torch.inference_mode():
                out = m.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_tokens,
                                       num_return_sequences=1 if greedy else n, pad_token_id=m.pad_id,
                                       **sampling)
        except (RuntimeError, ValueError) as e:  # CUDA OOM is a RuntimeError; bad settings a ValueError
            raise LLMError(f"{self.name}: generation failed: {describe(e)}") from None
        texts, counts, reasons = [], [], []
        for row in out[:, ids.shape[1]:].tolist():
            end = next((i + 1 for i, t in enumerate(row) if t in m.eos_ids), None)
            kept = row[:end] if end else row
            texts.append(m.tokenizer.decode(kept, skip_special_tokens=True))
            counts.append(len(kept))
            reasons.append("stop" if end else "length")
        if greedy:
            texts, counts, reasons = texts * n, counts * n, reasons * n
        return Generation(texts, int(ids.shape[1]), counts, reasons)


def render_prompt(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[str, bool]:
    """The prompt text, and whether it came from the tokenizer's chat template."""
    if getattr(tokenizer, "chat_template", None):
        # tokenize=False: transformers 4 returns ids and 5 a dict when tokenizing here; text is the same in both
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return text, True
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:", False


def _load(model: str) -> _Loaded:
    torch = require("torch", "hf")
    transformers = require("transformers", "hf")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    local = os.path.isdir(model)
    if not local and model.startswith(("/", "./", "../", "~")):
        raise LLMError(f"hf:{model}: no such model folder")
    key = (os.path.abspath(model) if local else model, device)
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        # The checkpoint's own dtype on a GPU; float32 on the CPU, where half precision is slow or missing.
        dtype = "auto" if device == "cuda" else torch.float32
        dtype_kw = "dtype" if _version(transformers.__version__) >= (4, 56) else "torch_dtype"
        try:
            tok = transformers.AutoTokenizer.from_pretrained(model, local_files_only=local)
            lm = transformers.AutoModelForCausalLM.from_pretrained(model, local_files_only=local,
                                                                   **{dtype_kw: dtype})
        except (OSError, ValueError, KeyError) as e:  # missing files, offline hub miss, unknown architecture
            raise LLMError(f"hf:{model}: cannot load: {describe(e)}") from None
        lm.to(device).eval()
        eos = lm.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tok.eos_token_id is not None:
            eos_ids.add(tok.eos_token_id)
        if not eos_ids:
            raise LLMError(f"hf:{model}: neither the tokenizer nor the generation config names an "
                           "end-of-sequence token")
        pad = tok.pad_token_id if tok.pad_token_id is not None else min(eos_ids)
        _LOADED[key] = _Loaded(tok, lm, device, eos_ids, pad, threading.Lock())
        return _LOADED[key]


def _version(v: str) -> tuple[int, int]:
    major, minor = (v.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)
