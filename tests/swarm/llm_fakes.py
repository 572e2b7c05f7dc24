"""Model servers on loopback, speaking the real protocols (OpenAI chat completions, Ollama
/api/chat), answering from a script; and a scripted ChatClient for unit paths.

A script step is ``Answer(text)`` (optionally slow, with a reported cost) or
``Status(code, ...)`` (an HTTP error, e.g. 401, 429 with Retry-After, 500). When the
script runs out, the last step repeats. Every request is recorded (path, headers, JSON).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kernels import workloads
from swarm.llm.client import LLMError, Reply


@dataclass
class Answer:
    text: str
    tokens_in: int = 900
    tokens_out: int = 300
    delay: float = 0.0
    cost: float | None = None


@dataclass
class Status:
    code: int
    message: str = "error"
    headers: dict = field(default_factory=dict)


class _Server:
    def __init__(self, script):
        self.script = list(script) if not callable(script) else [script]
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                server._reply(self, "GET", None)

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                server._reply(self, "POST", body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def next_step(self, body=None):
        with self.lock:
            if callable(self.script[0]):         # a responder: the step depends on the request
                return self.script[0](body or {})
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _reply(self, h, method, body):
        with self.lock:
            self.requests.append({"method": method, "path": h.path, "headers": dict(h.headers), "json": body})
        step = self.next_step(body)
        if isinstance(step, Status):
            payload = json.dumps(self.error_body(step)).encode()
            h.send_response(step.code)
            h.send_header("content-type", "application/json")
            for k, v in step.headers.items():
                h.send_header(k, v)
            h.send_header("content-length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        if step.delay:
            time.sleep(step.delay)
        self.answer(h, body or {}, step)

    def _json(self, h, obj, content_type="application/json"):
        payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        h.send_response(200)
        h.send_header("content-type", content_type)
        h.send_header("content-length", str(len(payload)))
        h.end_headers()
        try:
            h.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the client gave up (timeout test)


class OpenAIServer(_Server):
    """POST {base}/chat/completions, base = http://127.0.0.1:PORT/v1."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def error_body(self, step):
        return {"error": {"message": step.message, "type": "error", "code": step.code}}

    def answer(self, h, body, step):
        usage = {"prompt_tokens": step.tokens_in, "completion_tokens": step.tokens_out,
                 "total_tokens": step.tokens_in + step.tokens_out}
        if step.cost is not None:
            usage["cost"] = step.cost
        self._json(h, {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
                       "model": body.get("model", "scripted"),
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": step.text},
                                    "finish_reason": "stop"}], "usage": usage})


class OllamaServer(_Server):
    """POST /api/chat (streamed NDJSON or one JSON object, as the client asks)."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def error_body(self, step):
        return {"error": step.message}

    def answer(self, h, body, step):
        base = {"model": body.get("model", "scripted"), "created_at": "2026-11-29T00:00:00Z"}
        done = {**base, "message": {"role": "assistant", "content": "" if body.get("stream", True) else step.text},
                "done": True, "done_reason": "stop", "total_duration": 1000, "prompt_eval_count": step.tokens_in,
                "eval_count": step.tokens_out}
        if body.get("stream", True):
            half = len(step.text) // 2
            lines = [{**base, "message": {"role": "assistant", "content": part}, "done": False}
                     for part in (step.text[:half], step.text[half:])] + [done]
            self._json(h, "".join(json.dumps(x) + "\n" for x in lines).encode(), "application/x-ndjson")
        else:
            self._json(h, done)


class ScriptedClient:
    """A ChatClient without a network: answers or raises from a script (unit paths)."""

    def __init__(self, script):
        self.script = list(script)
        self.calls: list[list] = []

    def chat(self, messages, *, max_tokens):
        self.calls.append(list(messages))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, LLMError):
            raise step
        return Reply(text=step.text, tokens_in=step.tokens_in, tokens_out=step.tokens_out, cost=step.cost,
                     latency_ms=1.0, model="scripted")


# ---------------------------------------------------------------------------- kernels to answer with

SOFTMAX = workloads.get("softmax")
TWO_PASS = SOFTMAX.template("cpu").source("two_pass")
ONLINE = SOFTMAX.template("cpu").source("online")


def fenced(source: str, words: str = "One pass keeps a running max and sum; the input is read twice, not three times.") -> str:
    return f"{words}\n\n```c\n{source}```\n"


def online_rewrite() -> str:
    """A genuinely different kernel from the two-pass seed: the online algorithm, with its
    own comment so its text is the model's."""
    return fenced("/* rewritten by the model: online max and sum */\n" + ONLINE)


EDIT_SCALE = """Multiply by the reciprocal in one expression.
<<<<<<< SEARCH
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++) yr[c] *= inv;
=======
    const float inv = 1.0f / s;
    for (c = 0; c < cols; c++) yr[c] = yr[c] * inv;
>>>>>>> REPLACE
"""

EDIT_NOT_APPLYING = """<<<<<<< SEARCH
    for (c = 0; c < cols; c++) yr[c] /= s;   /* not in the kernel */
=======
    for (c = 0; c < cols; c++) yr[c] *= 1.0f / s;
>>>>>>> REPLACE
"""

WRONG_ENTRY = fenced(TWO_PASS.replace("void kernel(", "void softmax_kernel("), "Renamed for clarity.")
GARBAGE = "I am sorry, I cannot help with kernels today. Have a nice day!"


def system_text(body: dict) -> str:
    """The system message of a chat request (both protocols carry ``messages``)."""
    return next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "system"), "")


def vector_online_rewrite() -> str:
    """Genuinely faster than the scalar two-pass seed (VEC=1, libm expf): the online
    algorithm at full vector width whatever the VEC macro says."""
    forced = ("/* rewritten by the model: online max and sum at full vector width */\n#undef VEC\n"
              "#ifdef __AVX512F__\n#define VEC 16\n#else\n#define VEC 8\n#endif\n")
    source = ONLINE.replace("#ifndef VEC\n#define VEC 1\n#endif\n", forced)
    assert source != ONLINE
    return fenced(source, "Vectorise the online pass: one read for max and sum, one for the output.")
