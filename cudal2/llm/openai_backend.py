"""The 'openai:<model>' backend: any OpenAI-compatible chat-completions server, through the
official `openai` client (the OpenAI API itself, vLLM's or SGLang's server, `cudal2 serve`).

Guarantees:
- the server is `[llm] base_url`, else $OPENAI_BASE_URL, else the OpenAI API;
- the key is read from the variable `[llm] api_key_env` names; when it is unset and a server
  URL is given, the key "EMPTY" is sent (local servers ignore it), and when it is unset for the
  OpenAI API itself, construction fails with `LLMError`;
- one request times out after `[llm] timeout_s` and is retried `[llm] retries` times by the
  client, on connection errors, timeouts, 408, 409, 429 and 5xx only;
- `propose` returns exactly n texts: a server that ignores `n` (several do) is asked again for
  the rest, at most n requests in all, since each answer must carry at least one choice;
- any client error becomes `LLMError` with its one-line reason.

Does not: stream, send top_p, stop or seed, or use `max_completion_tokens` (newer OpenAI
reasoning models want that name instead of `max_tokens`; vLLM and SGLang take `max_tokens`);
a choice whose content is null (a refusal or a tool call) counts as the empty text.
"""

from __future__ import annotations

import os

from cudal2.config import LLMConfig
from cudal2.llm.base import LLMError, describe, require, validate


class OpenAIBackend:
    def __init__(self, model: str, cfg: LLMConfig):
        openai = require("openai", "llm")
        self.model = model
        self.name = f"openai:{model}"
        base_url = cfg.base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get(cfg.api_key_env, "")
        if not key:
            if base_url is None:
                raise LLMError(f"openai: ${cfg.api_key_env} is not set; set it, or set [llm] base_url "
                               "for a local OpenAI-compatible server")
            key = "EMPTY"
        self.base_url = base_url
        self._errors = openai.OpenAIError
        self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=cfg.timeout_s,
                                     max_retries=cfg.retries)

    def propose(self, messages: list[dict[str, str]], n: int, temperature: float,
                max_tokens: int) -> list[str]:
        validate(messages, n, temperature, max_tokens)
        texts: list[str] = []
        for _ in range(n):
            try:
                resp = self._client.chat.completions.create(
                    model=self.model, messages=messages, n=n - len(texts),
                    temperature=temperature, max_tokens=max_tokens)
            except self._errors as e:
                where = self.base_url or "the OpenAI API"
                raise LLMError(f"{self.name} at {where}: {describe(e)}") from None
            choices = sorted(resp.choices or [], key=lambda c: c.index)
            if not choices:
                raise LLMError(f"{self.name}: the server answered with no choices")
            texts += [c.message.content or "" for c in choices]
            if len(texts) >= n:
                break
        return texts[:n]
