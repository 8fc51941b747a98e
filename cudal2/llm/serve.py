"""`cudal2 serve`: a small OpenAI-compatible HTTP server over the hf backend, so that the
openai backend (or any OpenAI client) can use a local transformers model.

Guarantees:
- `POST /v1/chat/completions` takes {model, messages, n, temperature, max_tokens} and answers
  {"id", "object": "chat.completion", "created", "model", "choices": [{"index", "message":
  {"role": "assistant", "content"}, "finish_reason": "stop" | "length"}], "usage"}; `GET
  /v1/models` lists the one served model;
- a request that is not valid JSON, lacks messages, has a field of the wrong type, asks to
  stream, or is larger than MAX_BODY_BYTES gets 400 with an OpenAI-style
  {"error": {"message", "type", ...}} body; an unknown path 404; a generation failure 500. No
  request brings the server down;
- n defaults to 1 as in the OpenAI API; a missing temperature or max_tokens takes the `[llm]`
  default from cudal2.config; the request's `model` is not checked (one model is served) and
  the served name is echoed;
- it listens on 127.0.0.1 unless told otherwise; requests are handled on threads, and
  generation is serialised per model by the hf backend.

Does not: authenticate (the API key is ignored: bind to loopback), stream, batch requests
together, or implement any other endpoint (completions, embeddings, tools).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import typer

from cudal2.config import LLMConfig
from cudal2.llm.base import LLMError, describe, validate

# Large enough for a prompt with retrieved context; small enough that a client cannot make the
# server allocate without bound.
MAX_BODY_BYTES = 16 << 20


class _BadRequest(Exception):
    pass


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True   # a hung client must not keep the process alive after shutdown

    def __init__(self, backend: Any, host: str, port: int, max_choices: int | None = None):
        super().__init__((host, port), _Handler)
        self.backend = backend
        # Cap on choices per answer, as servers that ignore `n` behave; clients must ask again.
        self.max_choices = max_choices
        self.defaults = LLMConfig()

    @property
    def port(self) -> int:
        return self.server_address[1]


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") != "/v1/models":
            return self._error(404, f"no such endpoint: GET {self.path}", "not_found_error")
        self._send(200, {"object": "list", "data": [
            {"id": self.server.backend.model, "object": "model", "created": 0, "owned_by": "cudal2"}]})

    def do_POST(self) -> None:
        if urlsplit(self.path).path.rstrip("/") != "/v1/chat/completions":
            return self._error(404, f"no such endpoint: POST {self.path}", "not_found_error")
        try:
            req = self._request()
        except _BadRequest as e:
            return self._error(400, str(e), "invalid_request_error")
        try:
            gen = self.server.backend.generate(**req)
        except LLMError as e:
            return self._error(500, str(e), "server_error")
        except Exception as e:  # a bug here must answer this client, not kill its thread silently
            return self._error(500, describe(e), "server_error")
        n_out = len(gen.texts) if self.server.max_choices is None else min(len(gen.texts), self.server.max_choices)
        choices = [{"index": i, "message": {"role": "assistant", "content": gen.texts[i]},
                    "finish_reason": gen.finish_reasons[i]} for i in range(n_out)]
        completion = sum(gen.completion_tokens[:n_out])
        self._send(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": self.server.backend.model, "choices": choices,
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": completion,
                      "total_tokens": gen.prompt_tokens + completion}})

    def _request(self) -> dict[str, Any]:
        """The generate() arguments of this request, or _BadRequest saying what is wrong."""
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise _BadRequest("a Content-Length header is required") from None
        if not 0 < length <= MAX_BODY_BYTES:
            raise _BadRequest(f"body must be 1 to {MAX_BODY_BYTES} bytes, got {length}")
        try:
            body = json.loads(self.rfile.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise _BadRequest(f"body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise _BadRequest("body must be a JSON object")
        if body.get("stream"):
            raise _BadRequest("stream is not supported by cudal2 serve")
        d = self.server.defaults
        req = {"messages": body.get("messages"), "n": body.get("n", 1),
               "temperature": body.get("temperature", d.temperature),
               "max_tokens": body.get("max_tokens", d.max_tokens)}
        try:
            validate(**req)
        except LLMError as e:
            raise _BadRequest(str(e)) from None
        return req

    def _error(self, status: int, message: str, kind: str) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": status}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"cudal2 serve: {self.address_string()} {format % args}\n")


def make_server(model_path: str, host: str = "127.0.0.1", port: int = 8000,
                max_choices: int | None = None) -> ChatServer:
    """Load the model (once per process) and bind; port 0 picks a free port."""
    from cudal2.llm.hf_backend import HFBackend
    return ChatServer(HFBackend(model_path), host, port, max_choices)


def serve(model_path: str, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until interrupted."""
    server = make_server(model_path, host, port)
    print(f"cudal2 serve: {model_path} on http://{host}:{server.port}/v1 ({server.backend.device})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def serve_in_thread(model_path: str, host: str = "127.0.0.1", port: int = 0,
                    max_choices: int | None = None) -> tuple[ChatServer, int]:
    """Start serving on a daemon thread; returns (server, port). Stop with server.shutdown() then
    server.server_close()."""
    server = make_server(model_path, host, port, max_choices)
    # A short poll so that shutdown() returns promptly (the default waits up to 0.5 s).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="cudal2-serve",
                     daemon=True).start()
    return server, server.port


def serve_command(model: str = typer.Option(..., "--model", help="A transformers model folder or hub name."),
                  host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; there is no "
                                           "authentication, so keep it on loopback."),
                  port: int = typer.Option(8000, "--port", help="TCP port; 0 picks a free one.")) -> None:
    """Serve a local transformers model over an OpenAI-compatible chat-completions API."""
    try:
        serve(model, host, port)
    except LLMError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)
    except OSError as e:  # the port is taken or the address is not ours
        typer.echo(f"error: cannot listen on {host}:{port}: {e.strerror or e}", err=True)
        raise typer.Exit(2)
