"""One interface to every LLM cudal2 can use, and the parser of `[llm] backend`.

Guarantees: `make_backend` returns None for an empty backend, a `Backend` for
'openai:<model>', 'vllm:<model-or-path>' or 'hf:<model-or-path>', and otherwise raises
`LLMError` naming the accepted forms; a backend whose Python package is missing raises
`LLMError` with the pip command that installs it, at construction, not at first use;
`Backend.propose` returns exactly n texts or raises `LLMError` with a one-line reason.

Does not: import torch, transformers, vllm or openai here (each backend imports its own,
lazily, so the template-only search never pays for them); retry (the openai client retries
transport errors itself, `[llm] retries` times); parse or judge what the model wrote.

Example:

    from cudal2.config import Config
    from cudal2.llm.base import make_backend
    llm = make_backend(Config.load("cudal2.toml").llm)      # None when no LLM is configured
    texts = llm.propose([{"role": "user", "content": "Write an HGEMM kernel."}],
                        n=4, temperature=0.8, max_tokens=4096)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Protocol, runtime_checkable

from cudal2.config import LLMConfig

FORMS = "'openai:<model>', 'vllm:<model-or-path>' or 'hf:<model-or-path>'"
ROLES = ("system", "user", "assistant")


class LLMError(RuntimeError):
    """An LLM could not be set up or did not answer; the message is one line."""


@runtime_checkable
class Backend(Protocol):
    name: str     # e.g. "hf:/models/qwen", as written in [llm] backend
    model: str    # the part after the prefix

    def propose(self, messages: list[dict[str, str]], n: int, temperature: float,
                max_tokens: int) -> list[str]:
        """n completion texts of the chat `messages`; temperature 0 means greedy."""
        ...


def make_backend(cfg: LLMConfig) -> Backend | None:
    """The backend `cfg.backend` names, or None when it is empty."""
    spec = cfg.backend.strip()
    if not spec:
        return None
    prefix, sep, model = spec.partition(":")
    if not sep or not model.strip():
        raise LLMError(f"[llm] backend {spec!r}: expected {FORMS}")
    model = model.strip()
    if prefix == "openai":
        from cudal2.llm.openai_backend import OpenAIBackend
        return OpenAIBackend(model, cfg)
    if prefix == "vllm":
        from cudal2.llm.vllm_backend import VLLMBackend
        return VLLMBackend(model)
    if prefix == "hf":
        from cudal2.llm.hf_backend import HFBackend
        return HFBackend(model)
    raise LLMError(f"[llm] backend {spec!r}: unknown prefix {prefix!r}; expected {FORMS}")


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or raise LLMError saying which extra of cudal2 provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise LLMError(f"{module} is not installed ({one_line(e)}): pip install 'cudal2[{extra}]'") from None


def validate(messages: list[dict[str, str]], n: int, temperature: float, max_tokens: int) -> None:
    """Raise LLMError naming the first bad argument of a `propose` call."""
    if not isinstance(messages, list) or not messages:
        raise LLMError("messages must be a non-empty list of {role, content} objects")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise LLMError(f"messages[{i}] must be {{'role': one of {list(ROLES)}, 'content': a string}}")
    # bool is an int in Python; True as a sample count is a caller's bug, not a request for 1
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise LLMError(f"n must be an integer >= 1, got {n!r}")
    if not isinstance(temperature, (int, float)) or isinstance(temperature, bool) or temperature < 0:
        raise LLMError(f"temperature must be a number >= 0, got {temperature!r}")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise LLMError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")


def one_line(e: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message, shortened: errors end up in a table cell."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(e: BaseException) -> str:
    """`Type: first line of the message`: how a backend reports the exception behind a failure."""
    return f"{type(e).__name__}: {one_line(e)}"
