"""LLM backends on a real (tiny, random) transformers model: the hf backend, `cudal2 serve`, and
the openai backend talking to it through the real `openai` client over loopback.

torch, transformers and openai are imported inside the tests, so that collecting this file on a
machine without them (the GPU machine runs `-m gpu` only) does not fail.
"""

import http.client
import json
import socket
import sys
import time

import pytest

from cudal2.config import LLMConfig
from cudal2.llm.base import Backend, LLMError, make_backend


CHAT = [{"role": "system", "content": "You write CUDA kernels."},
        {"role": "user", "content": "Write an HGEMM kernel for M=N=K=4096."}]


@pytest.fixture
def server(tiny_model_path):
    from cudal2.llm.serve import serve_in_thread
    srv, port = serve_in_thread(tiny_model_path)
    yield srv, port
    srv.shutdown()
    srv.server_close()


def openai_backend(port: int, **kw) -> Backend:
    cfg = LLMConfig(backend="openai:tiny", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=30.0, retries=0)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return make_backend(cfg)


def post(port: int, body: bytes) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_hf_backend_returns_n_texts(hf):
    assert isinstance(hf, Backend) and hf.name.startswith("hf:")
    texts = hf.propose(CHAT, n=2, temperature=0.8, max_tokens=16)
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)


def test_hf_sampling_gives_distinct_completions(hf):
    import torch
    torch.manual_seed(0)
    texts = hf.propose(CHAT, n=3, temperature=1.0, max_tokens=16)
    assert len(texts) == 3
    assert len(set(texts)) > 1, "temperature 1.0 sampled three identical completions"


def test_hf_greedy_is_deterministic(hf):
    first = hf.propose(CHAT, n=2, temperature=0.0, max_tokens=16)
    second = hf.propose(CHAT, n=1, temperature=0.0, max_tokens=16)
    assert first[0] == first[1] == second[0]
    assert first[0], "greedy decoded to nothing: the determinism check would be vacuous"


def test_hf_decodes_only_new_tokens(hf):
    gen = hf.generate(CHAT, n=1, temperature=0.0, max_tokens=16)
    assert CHAT[1]["content"] not in gen.texts[0]
    assert gen.completion_tokens[0] <= 16 and gen.finish_reasons[0] in ("stop", "length")


def test_prompt_without_chat_template_joins_roles(hf):
    from cudal2.llm.hf_backend import render_prompt

    class NoTemplate:
        chat_template = None
    text, templated = render_prompt(NoTemplate(), CHAT)
    assert not templated
    assert text == f"system: {CHAT[0]['content']}\nuser: {CHAT[1]['content']}\nassistant:"


def test_hf_rejects_bad_arguments(hf):
    with pytest.raises(LLMError, match="n must be"):
        hf.propose(CHAT, n=0, temperature=0.8, max_tokens=16)
    with pytest.raises(LLMError, match=r"messages\[0\]"):
        hf.propose([{"role": "robot", "content": "hi"}], n=1, temperature=0.8, max_tokens=16)


def test_openai_backend_through_serve_gets_n_completions(server):
    _, port = server
    texts = openai_backend(port).propose(CHAT, n=3, temperature=0.8, max_tokens=16)
    assert len(texts) == 3 and all(isinstance(t, str) for t in texts)


def test_openai_backend_tops_up_when_server_ignores_n(tiny_model_path):
    from cudal2.llm.serve import serve_in_thread
    srv, port = serve_in_thread(tiny_model_path, max_choices=1)
    try:
        texts = openai_backend(port).propose(CHAT, n=3, temperature=0.8, max_tokens=16)
    finally:
        srv.shutdown()
        srv.server_close()
    assert len(texts) == 3


def test_serve_answers_openai_schema(server):
    _, port = server
    status, body = post(port, json.dumps({"model": "x", "messages": CHAT, "n": 2, "max_tokens": 8}).encode())
    assert status == 200, body
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert all(c["message"]["role"] == "assistant" for c in body["choices"])
    u = body["usage"]
    assert u["prompt_tokens"] > 0 and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]


def test_serve_lists_its_model(server, tiny_model_path):
    _, port = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/v1/models")
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 200 and body["data"][0]["id"] == tiny_model_path


def test_serve_bad_json_is_400_and_server_lives(server):
    _, port = server
    status, body = post(port, b'{"messages": [')
    assert status == 400 and "not valid JSON" in body["error"]["message"]
    status, body = post(port, json.dumps({"messages": CHAT, "max_tokens": 4}).encode())
    assert status == 200, body


@pytest.mark.parametrize("payload,needle", [({"messages": []}, "messages"),
                                            ({"messages": CHAT, "n": "3"}, "n must be"),
                                            ({"messages": CHAT, "stream": True}, "stream")])
def test_serve_bad_fields_are_400(server, payload, needle):
    _, port = server
    status, body = post(port, json.dumps(payload).encode())
    assert status == 400 and needle in body["error"]["message"]


def test_make_backend_empty_is_none():
    assert make_backend(LLMConfig(backend="")) is None


@pytest.mark.parametrize("spec", ["gpt:gpt-4o", "openai", "hf:"])
def test_make_backend_rejects_bad_spec_naming_forms(spec):
    with pytest.raises(LLMError, match="openai:<model>"):
        make_backend(LLMConfig(backend=spec))


def test_hf_missing_folder_is_one_line_error(tmp_path):
    with pytest.raises(LLMError, match="no such model folder"):
        make_backend(LLMConfig(backend=f"hf:{tmp_path / 'absent'}"))


def test_missing_extra_names_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)   # makes `import vllm` fail even where it is installed
    with pytest.raises(LLMError, match=r"pip install 'cudal2\[vllm\]'"):
        make_backend(LLMConfig(backend="vllm:some/model"))


def test_openai_without_key_for_openai_api_fails(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CUDAL2_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(LLMError, match="CUDAL2_TEST_NO_SUCH_KEY"):
        make_backend(LLMConfig(backend="openai:gpt-4o", api_key_env="CUDAL2_TEST_NO_SUCH_KEY"))


def test_openai_closed_port_fails_fast():
    with socket.socket() as s:   # a port that was just free on loopback: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = openai_backend(port, timeout_s=2.0)
    t0 = time.monotonic()
    with pytest.raises(LLMError, match="127.0.0.1"):
        backend.propose(CHAT, n=1, temperature=0.8, max_tokens=16)
    assert time.monotonic() - t0 < 5.0
