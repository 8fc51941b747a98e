"""LLM backends behind one interface: `make_backend([llm] config) -> Backend | None`.

See base.py for the contract; openai_backend.py, vllm_backend.py and hf_backend.py for the
three backends; serve.py for `cudal2 serve`, an OpenAI-compatible server over the hf backend.
"""

from cudal2.llm.base import Backend, LLMError, make_backend

__all__ = ["Backend", "LLMError", "make_backend"]
