"""The 'vllm:<model-or-path>' backend: vLLM's offline engine in this process.

Guarantees: the engine is built once per model per process (`vllm.LLM(model=...)`, everything
else at vLLM's defaults: dtype from the checkpoint, 90% of GPU memory), so a second backend for
the same model (the CLI checks the config before the search builds its own) reuses it instead
of asking the GPU for another 90%; `propose` renders the chat through the model's own chat
template (`LLM.chat`) and returns exactly n texts; greedy decoding (temperature 0) is asked for
once and its text repeated n times, since repeated greedy runs are the same run and some vLLM
versions refuse n > 1 when greedy.

Does not: run in CI. It needs a GPU and the `vllm` package, neither of which the CPU test
machine has, so this module is written against vLLM's documented `LLM.chat(messages,
sampling_params, use_tqdm=...)` -> list[RequestOutput], each with `.outputs[i].text` (vLLM
0.6 and later) and has no automated test; the hf backend and `cudal2 serve` are what the
tests exercise. Sampling settings other than temperature (top_p, top_k) come from the model's
generation_config, as vLLM applies them by default.
"""

from __future__ import annotations

import threading
from typing import Any

from cudal2.llm.base import LLMError, describe, require, validate

_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()


class VLLMBackend:
    def __init__(self, model: str):
        vllm = require("vllm", "vllm")
        self.model = model
        self.name = f"vllm:{model}"
        self._SamplingParams = vllm.SamplingParams
        with _ENGINES_LOCK:
            if model not in _ENGINES:
                try:
                    _ENGINES[model] = vllm.LLM(model=model)
                except Exception as e:  # vLLM raises many types (ValueError, OSError, CUDA errors) on load
                    raise LLMError(f"{self.name}: cannot load: {describe(e)}") from None
            self._llm = _ENGINES[model]

    def propose(self, messages: list[dict[str, str]], n: int, temperature: float,
                max_tokens: int) -> list[str]:
        validate(messages, n, temperature, max_tokens)
        greedy = temperature == 0
        params = self._SamplingParams(n=1 if greedy else n, temperature=temperature, max_tokens=max_tokens)
        try:
            outputs = self._llm.chat(messages, params, use_tqdm=False)
        except Exception as e:  # an engine failure must reach the caller as one line, not a trace
            raise LLMError(f"{self.name}: generation failed: {describe(e)}") from None
        texts = [o.text for o in outputs[0].outputs]
        if greedy and texts:
            texts = texts * n
        if len(texts) != n:
            raise LLMError(f"{self.name}: asked for {n} completions, got {len(texts)}")
        return texts
