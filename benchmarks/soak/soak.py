#!/usr/bin/env python3
"""Soak test for `minivllm serve`: many mixed requests against one real server, then checks.

Starts the server (CPU backend, tiny Qwen3, loopback, --port 0) and sends --requests requests
from --clients concurrent clients: well-formed completions and chat completions with random
valid sampling parameters (streamed or not), 10 % streams the client drops after a chunk or
two, 5 % malformed requests (broken JSON, wrong types, out-of-range numbers, invalid UTF-8,
oversized bodies and headers, bad HTTP) and 1 % prompts over max_model_len. Meanwhile
--slow-clients clients either send headers a byte per second (the server must answer 408 after
server.header_timeout_s; they reconnect and repeat) or open a stream and never read it.

Afterwards it checks that the server is alive, that every request got a complete answer or the
right 4xx with an OpenAI error body, that /metrics goes back to 0 running, 0 waiting and 0 KV
cache use, that resident memory grew less than 10 % from the first 10 % of requests to the end (the median
of the last three samples, the last one after --settle-s seconds idle), and prints p50/p99 latency. --compare-without-slow repeats the same seeded workload on a fresh
server without the slow clients and compares the p99s. Exit status 0 only if every check passed.

    python3 benchmarks/soak/soak.py --requests 1000 --json-out soak.json

Run from the repository root after scripts/setup.sh, or with MINIVLLM_BIN, MINIVLLM_SOURCE_DIR,
MINIVLLM_DATA and MINIVLLM_PLUGIN_DIR set as the server tests have them. Needs only Python's
standard library and python3-prometheus-client.
"""

import argparse
import asyncio
import json
import math
import os
import queue
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
READ_TIMEOUT_S = 30.0  # every connect, send and read
WORDS = ("the quick brown fox jumps over a lazy dog while seven tired owls count stars "
         "hello world tell me story about rivers cities music numbers one two three").split()
STOP_STRINGS = ["\n", ".", " the", "a", "!", "ing", "\u00e9", "\u4e2d", "xyz", ", "]


# --- the server -------------------------------------------------------------------------------

class Server:
    def __init__(self, args, label):
        self.label = label
        self.cmd = [args.bin, "serve", "--config", args.config,
                    "--set", "model.path=" + json.dumps(args.model),
                    "--set", "runtime.plugin_dirs=[" + json.dumps(args.plugin_dir) + "]",
                    "--set", 'runtime.log_level="warn"',
                    "--set", f"server.header_timeout_s={args.header_timeout}",
                    "--set", f"server.max_body_bytes={args.max_body_bytes}",
                    "--set", f"server.max_header_bytes={args.max_header_bytes}",
                    "--set", f"model.max_model_len={args.max_model_len}"]
        for kv in args.set:
            self.cmd += ["--set", kv]
        self.cmd += ["--port", "0"]
        self.proc = None
        self.stderr_file = tempfile.TemporaryFile()

    def start(self, timeout=120):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file)
        lines = queue.Queue()

        def pump():  # keeps reading stdout so the server never blocks writing it
            for line in self.proc.stdout:
                lines.put(line.decode("utf-8", "replace"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = None
            m = re.search(r"listening on http://([^\s:]+|\[[^\]]+\]):(\d+)", line or "")
            if m:
                self.host, self.port = m.group(1).strip("[]"), int(m.group(2))
                return
            if line is None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: no 'listening on' within {timeout} s; "
                                   f"stderr:\n{self.stderr_tail()}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def rss_kib(self, field="VmRSS"):
        """VmRSS (resident now) or VmHWM (the peak so far) in KiB."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def cpu_s(self):
        """The server's user + system CPU seconds so far."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s; returns the exit code (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def stderr_tail(self, n=3000):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", "replace")[-n:]


# --- HTTP/1.1 over raw non-blocking sockets ---------------------------------------------------
# The loop's sock_* calls rather than asyncio streams: a stream drops the bytes it already read
# once a write fails, which would hide a 413/431 the server did send before closing on a body
# we were still sending. Here a failed send still lets us read what arrived.

class Closed(Exception):
    """The server closed the connection before a whole response arrived."""


class Conn:
    def __init__(self, sock):
        self.sock, self.buf, self.eof = sock, bytearray(), False
        self.received = 0  # bytes read so far (to tell "no response at all" from a cut one)
        self.last_used = time.monotonic()

    @classmethod
    async def open(cls, host, port, rcvbuf=None):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if rcvbuf:  # before connect, so the window is small from the start
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(s, (host, port)), READ_TIMEOUT_S)
        except BaseException:
            s.close()
            raise
        return cls(s)

    async def send(self, data):
        """Returns None, or the error that stopped the send (the server may refuse early)."""
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_sendall(self.sock, data), READ_TIMEOUT_S)
            return None
        except (OSError, asyncio.TimeoutError) as e:
            return repr(e)

    async def fill(self, timeout=READ_TIMEOUT_S):
        if self.eof:
            return False
        try:
            data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(self.sock, 65536), timeout)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        self.received += len(data)
        return True

    async def read_until(self, sep):
        while True:
            i = self.buf.find(sep)
            if i >= 0:
                out = bytes(self.buf[:i + len(sep)])
                del self.buf[:i + len(sep)]
                return out
            if not await self.fill():
                raise Closed()

    async def read_exact(self, n):
        while len(self.buf) < n:
            if not await self.fill():
                raise Closed()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def read_to_eof(self):
        while await self.fill():
            pass
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def close(self, rst=False):
        if rst:  # an abrupt RST instead of a FIN, as a crashed client would leave
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def http_request(path, body=b"", method="POST", headers=(), content_type="application/json"):
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if content_type and method == "POST":
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{k}: {v}" for k, v in headers]
    if method == "POST" and not any(k.lower() == "transfer-encoding" for k, _ in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def read_head(conn):
    head = await conn.read_until(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    if not m:
        raise ValueError(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    return int(m.group(1)), headers


async def chunks(conn):
    """The decoded chunks of a chunked body."""
    while True:
        size = int((await conn.read_until(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            while await conn.read_until(b"\r\n") != b"\r\n":  # trailers
                pass
            return
        data = await conn.read_exact(size + 2)
        yield data[:-2]


async def read_response(conn):
    status, headers = await read_head(conn)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b"".join([c async for c in chunks(conn)])
    elif "content-length" in headers:
        body = await conn.read_exact(int(headers["content-length"]))
    else:
        body = await conn.read_to_eof()
    return status, headers, body


def error_body_problem(body, status):
    """None if body is OpenAI's {"error": {"message", "type", "param", "code"}}, else why not."""
    try:
        doc = json.loads(body)
    except ValueError:
        return f"the {status} body is not JSON"
    err = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(err, dict):
        return "no error object"
    missing = [k for k in ("message", "type", "param", "code") if k not in err]
    if missing:
        return f"error lacks {missing}"
    if not isinstance(err["message"], str) or not err["message"] or not isinstance(err["type"], str):
        return "error.message/type is not a non-empty string"
    if err["code"] != status:
        return f"error.code {err['code']!r} is not {status}"
    return None


# --- the workload ------------------------------------------------------------------------------

class Item:
    """One request of the workload: what to send and what must come back."""

    def __init__(self, idx, kind, label, payload, **kw):
        self.idx, self.kind, self.label, self.payload = idx, kind, label, payload
        self.stream = kw.get("stream", False)
        self.chat = kw.get("chat", False)
        self.choices = kw.get("choices", 1)  # n x prompts
        self.include_usage = kw.get("include_usage", False)
        self.logprobs = kw.get("logprobs", False)
        self.expect = kw.get("expect", {400})  # statuses allowed for malformed/too_long
        self.events = kw.get("events", 1)  # data: events a disconnecting client reads first
        self.rst = kw.get("rst", False)


def words(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def sampling(rng, max_tokens):
    p = {"max_tokens": max_tokens, "n": rng.choices([1, 2, 3], [60, 25, 15])[0]}
    if rng.random() < 0.5:
        p["temperature"] = rng.choice([0.0, round(rng.uniform(0.1, 1.5), 3)])
    if rng.random() < 0.3:
        p["top_p"] = round(rng.uniform(0.1, 1.0), 3)
    if rng.random() < 0.3:
        p["top_k"] = rng.choice([-1, rng.randint(1, 50)])
    if rng.random() < 0.15:
        p["min_p"] = round(rng.uniform(0.0, 0.2), 3)
    for key in ("presence_penalty", "frequency_penalty"):
        if rng.random() < 0.3:
            p[key] = round(rng.uniform(-2.0, 2.0), 3)
    if rng.random() < 0.3:
        p["repetition_penalty"] = round(rng.uniform(0.5, 2.0), 3)
    if rng.random() < 0.5:
        p["seed"] = rng.randint(-2**63, 2**63 - 1)
    if rng.random() < 0.3:
        p["stop"] = rng.choice(STOP_STRINGS) if rng.random() < 0.5 else rng.sample(STOP_STRINGS, rng.randint(1, 3))
    if rng.random() < 0.1:
        p["ignore_eos"] = True
    return p


def well_formed(rng, idx, vocab, max_tokens, stream=None, kind="ok", **kw):
    chat = rng.random() < 0.5
    body = sampling(rng, max_tokens)
    prompts = 1
    logprobs = False
    if chat:
        msgs = [{"role": "system", "content": words(rng, 2, 8)}] if rng.random() < 0.3 else []
        if rng.random() < 0.3:
            msgs += [{"role": "user", "content": words(rng, 1, 6)}, {"role": "assistant", "content": words(rng, 1, 6)}]
        msgs.append({"role": "user", "content": words(rng, 1, 20)})
        body["messages"] = msgs
        if rng.random() < 0.1:
            body["max_completion_tokens"] = body.pop("max_tokens")
        if rng.random() < 0.3:
            body["logprobs"], body["top_logprobs"], logprobs = True, rng.randint(0, 5), True
    else:
        r = rng.random()
        if r < 0.7:
            body["prompt"] = words(rng, 1, 30)
        elif r < 0.85:
            body["prompt"] = [rng.randrange(vocab) for _ in range(rng.randint(1, 40))]
        else:
            body["prompt"], prompts = [words(rng, 1, 10), words(rng, 1, 10)], 2
        if rng.random() < 0.3:
            body["logprobs"], logprobs = rng.randint(0, 5), True
        elif rng.random() < 0.1:
            body["echo"] = True
    stream = rng.random() < 0.5 if stream is None else stream
    include_usage = False
    if stream:
        body["stream"] = True
        if rng.random() < 0.5:
            body["stream_options"] = {"include_usage": True}
            include_usage = True
    path = "/v1/chat/completions" if chat else "/v1/completions"
    return Item(idx, kind, "chat" if chat else "completions",
                http_request(path, json.dumps(body).encode()), stream=stream, chat=chat,
                choices=body["n"] * prompts, include_usage=include_usage, logprobs=logprobs, **kw)


def malformed(rng, idx, args, vocab):
    """A request the server must refuse with a 4xx: (label, raw request bytes, statuses)."""
    C, H = "/v1/completions", "/v1/chat/completions"
    js = lambda d: json.dumps(d).encode()
    kind = rng.choice(["broken_json", "wrong_type", "bad_number", "bad_token_ids", "invalid_utf8",
                       "unsupported", "content_type", "bad_http", "not_found", "body_too_big",
                       "body_too_big_chunked", "headers_too_big", "too_many_headers"])
    expect = {400}
    if kind == "broken_json":
        raw = http_request(rng.choice([C, H]), rng.choice(
            [b'{"prompt": "x",', b"{", b"", b"nul", b"[1,2]", b'"str"', b'{"prompt":"x"}}',
             b'{"prompt":"x" "max_tokens":2}', b'{"messages":[{"role":"user","content":"x"}]']))
    elif kind == "wrong_type":
        raw = rng.choice([
            http_request(C, js({"prompt": "Hi", "max_tokens": "x"})),
            http_request(C, js({"prompt": "Hi", "n": "2"})),
            http_request(C, js({"prompt": "Hi", "temperature": "hot"})),
            http_request(C, js({"prompt": "Hi", "stop": [1]})),
            http_request(C, js({"prompt": {}})),
            http_request(C, js({"prompt": "Hi", "seed": 1.5})),
            http_request(C, js({"prompt": "Hi", "stream": "yes"})),
            http_request(H, js({"messages": "hi"})),
            http_request(H, js({"messages": [{"role": "user", "content": "x"}], "logprobs": "yes"})),
            http_request(H, js({"messages": [{"role": "user", "content": 5}]}))])
    elif kind == "bad_number":
        field, value = rng.choice([
            ("max_tokens", -1), ("max_tokens", 0), ("max_tokens", 10**30), ("n", 10**30), ("n", 0),
            ("n", 17), ("temperature", -5), ("logprobs", 999), ("logprobs", -1), ("top_p", 2),
            ("top_p", 0), ("top_k", -7), ("repetition_penalty", 0), ("min_p", 2), ("seed", 2**64)])
        raw = http_request(C, js({"prompt": "Hi", field: value}))
        if rng.random() < 0.2:
            raw = http_request(C, b'{"prompt":"Hi","presence_penalty":1e309}')
        elif rng.random() < 0.2:
            raw = http_request(H, js({"messages": [{"role": "user", "content": "x"}],
                                      "logprobs": True, "top_logprobs": 999}))
    elif kind == "bad_token_ids":
        raw = http_request(C, js(rng.choice([
            {"prompt": [vocab]}, {"prompt": [-1]}, {"prompt": [2**40]}, {"prompt": [[1, 2], [vocab + 5]]},
            {"prompt": "Hi", "stop_token_ids": [-5]}, {"prompt": [1.5]}])))
    elif kind == "invalid_utf8":
        raw = rng.choice([http_request(C, b'{"prompt":"\xff\xfe","max_tokens":2}'),
                          http_request(C, b'{"prompt":"ok\x80","max_tokens":2}'),
                          http_request(H, b'{"messages":[{"role":"user","content":"\xc3\x28"}],"max_tokens":2}')])
    elif kind == "unsupported":
        raw = http_request(C, js(rng.choice([
            {"prompt": "Hi", "suffix": "x"}, {"prompt": "Hi", "best_of": 2},
            {"prompt": "Hi", "echo": True, "logprobs": 1}, {"prompt": "Hi", "frobnicate": 1},
            {"prompt": "Hi", "stream_options": {"include_usage": True}}, {"prompt": "Hi", "logit_bias": {"1": 5}},
            {"prompt": ""}, {"prompt": "Hi", "stop": [""]}])))
    elif kind == "content_type":
        raw = http_request(C, b'{"prompt":"Hi","max_tokens":2}', content_type=rng.choice(
            ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]))
    elif kind == "bad_http":
        raw = rng.choice([b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                          b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                          b"GET /health HTTP/1.1\r\nBad Header\r\n\r\n"])
    elif kind == "not_found":
        method, path, expect = rng.choice([("POST", "/v1/nothing", {404}), ("GET", "/v1/completions", {405}),
                                           ("DELETE", "/v1/chat/completions", {405})])
        raw = http_request(path, method=method)
        if rng.random() < 0.3:
            raw, expect = http_request(C, js({"prompt": "Hi", "model": "no-such-model"})), {404}
    elif kind == "body_too_big":  # refused on Content-Length alone; we send it all anyway
        pad = args.max_body_bytes + rng.randint(1, 20000)
        raw, expect = http_request(C, b'{"prompt":"' + b"a" * pad + b'"}'), {413}
    elif kind == "body_too_big_chunked":  # no length up front: the chunks pass the limit
        big = b'{"prompt":"' + b"a" * (args.max_body_bytes + rng.randint(1, 20000)) + b'"}'
        body = b"".join(b"%x\r\n%s\r\n" % (len(big[i:i + 8192]), big[i:i + 8192])
                        for i in range(0, len(big), 8192)) + b"0\r\n\r\n"
        raw = http_request(C, body, headers=[("Transfer-Encoding", "chunked")])
        expect = {413}
    elif kind == "headers_too_big":
        raw = http_request("/health", method="GET",
                           headers=[("X-Big", "a" * (args.max_header_bytes + rng.randint(1, 4000)))])
        expect = {431}
    else:  # more fields than server.max_headers (default 100)
        raw = http_request("/health", method="GET", headers=[(f"X-H{i}", "v") for i in range(130)])
        expect = {431}
    return Item(idx, "malformed", kind, raw, expect=expect)


def too_long(rng, idx, args, vocab):
    over = args.max_model_len + rng.randint(1, 200)
    r = rng.random()
    if r < 0.4:  # "hello hello ..." is one token a word
        return Item(idx, "too_long", "text", http_request("/v1/completions", json.dumps(
            {"prompt": " ".join(["hello"] * over), "max_tokens": 4}).encode()))
    if r < 0.7:
        return Item(idx, "too_long", "token_ids", http_request("/v1/completions", json.dumps(
            {"prompt": [rng.randrange(1000, vocab) for _ in range(over)], "max_tokens": 4}).encode()))
    return Item(idx, "too_long", "chat", http_request("/v1/chat/completions", json.dumps(
        {"messages": [{"role": "user", "content": " ".join(["hello"] * over)}], "max_tokens": 4}).encode()))


def build_workload(args, vocab):
    rng = random.Random(args.seed)
    n = args.requests
    n_disc, n_bad, n_long = round(0.10 * n), round(0.05 * n), max(1, round(0.01 * n))
    kinds = ["disconnect"] * n_disc + ["malformed"] * n_bad + ["too_long"] * n_long
    kinds += ["ok"] * (n - len(kinds))
    rng.shuffle(kinds)
    items = []
    for i, kind in enumerate(kinds):
        if kind == "ok":
            items.append(well_formed(rng, i, vocab, rng.randint(1, args.max_tokens)))
        elif kind == "disconnect":  # long enough to still be running when we leave
            items.append(well_formed(rng, i, vocab, rng.randint(16, 48), stream=True, kind="disconnect",
                                     events=rng.randint(1, 2), rst=rng.random() < 0.5))
        elif kind == "malformed":
            items.append(malformed(rng, i, args, vocab))
        else:
            items.append(too_long(rng, i, args, vocab))
    return items


# --- checking answers ---------------------------------------------------------------------------

def completion_problem(item, headers, body):
    """None if a 200 answer is complete for item, else why not."""
    if item.stream:
        if not headers.get("content-type", "").startswith("text/event-stream"):
            return f"stream content-type {headers.get('content-type')!r}"
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            return f"the stream is not UTF-8: {e}"
        events = [line[5:].strip() for block in text.split("\n\n") for line in block.split("\n")
                  if line.startswith("data:")]
        if not events or events[-1] != "[DONE]" or events.count("[DONE]") != 1:
            return "the stream does not end with exactly one data: [DONE]"
        finished, usage = set(), False
        for e in events[:-1]:
            doc = json.loads(e)
            usage = usage or bool(doc.get("usage"))
            for c in doc.get("choices", []):
                if c.get("finish_reason"):
                    finished.add(c.get("index"))
        if finished != set(range(item.choices)):
            return f"finish_reason for choices {sorted(finished)}, expected 0..{item.choices - 1}"
        if item.include_usage and not usage:
            return "include_usage but no usage chunk"
        return None
    doc = json.loads(body)
    choices = doc.get("choices") or []
    if sorted(c.get("index") for c in choices) != list(range(item.choices)):
        return f"{len(choices)} choices, expected {item.choices}"
    for c in choices:
        if not isinstance(c.get("finish_reason"), str):
            return f"choice {c.get('index')} has no finish_reason"
        text = (c.get("message") or {}).get("content") if item.chat else c.get("text")
        if not isinstance(text, str):
            return f"choice {c.get('index')} has no text"
        if item.logprobs and not c.get("logprobs"):
            return f"choice {c.get('index')} lacks the logprobs asked for"
    if not isinstance((doc.get("usage") or {}).get("completion_tokens"), int):
        return "no usage"
    return None


class Run:
    def __init__(self, args, items, server, slow):
        self.args, self.items, self.server, self.slow = args, items, server, slow
        self.next = iter(range(len(items)))
        self.results = [None] * len(items)
        self.done = 0
        self.stop = asyncio.Event()
        self.slow_results = []  # per slowloris cycle / stuck stream
        self.rss_first = self.hwm_first = None
        self.rss_trace = []  # (requests done, VmRSS KiB) every 10 %
        self.died_at = None

    def record(self, item, status, problem, latency=None, response=b""):
        self.results[item.idx] = {"status": status, "problem": problem, "latency": latency,
                                  "request": item.payload[:300], "response": response[:500]}
        self.done += 1
        if self.done == max(1, len(self.items) // 10):
            self.rss_first = self.server.rss_kib()
            self.hwm_first = self.server.rss_kib("VmHWM")
        step = max(1, len(self.items) // 10)
        if self.done % step == 0:  # an RSS trace tells a leak (steady growth) from warm-up
            self.rss_trace.append((self.done, self.server.rss_kib()))
            print(f"  [{self.server.label}] {self.done}/{len(self.items)}", file=sys.stderr, flush=True)


async def do_request(run, item, pool):
    """Sends one workload item and records what came back."""
    srv = run.server
    started = time.monotonic()
    conn = None
    reused = False
    response = b""
    try:
        # Well-formed requests reuse a keep-alive connection that was idle only briefly: longer,
        # and the server's header timeout may be answering it 408 as we send.
        if item.kind == "ok" and pool and time.monotonic() - pool[0].last_used < min(1.0, run.args.header_timeout / 3):
            conn, reused = pool.pop(), True
        else:
            while pool:
                pool.pop().close()
            conn = await Conn.open(srv.host, srv.port)
        send_error = await conn.send(item.payload)
        if item.kind == "disconnect":
            status, headers = await read_head(conn)
            response = b"HTTP %d" % status
            if status != 200:
                body = await conn.read_exact(int(headers.get("content-length", 0)))
                return run.record(item, status, error_body_problem(body, status) if status < 500
                                  else f"{status} for a well-formed request", response=body)
            seen = 0
            async for chunk in chunks(conn):
                seen += chunk.count(b"data:")
                if seen >= item.events:
                    break
            conn.close(rst=item.rst)
            conn = None
            return run.record(item, status, None if seen else "no data: event before the disconnect")
        status, headers, body = await read_response(conn)
        latency = time.monotonic() - started
        response = body
        if item.kind == "ok":
            if status == 200:
                problem = completion_problem(item, headers, body)
            elif status >= 500:
                problem = f"{status} for a well-formed request"
            else:
                problem = error_body_problem(body, status)  # an error body is an answer too
        else:
            problem = None if status in item.expect else f"status {status}, expected {sorted(item.expect)}"
            if status >= 500:
                problem = f"{status} (a 5xx)"
            elif problem is None and 400 <= status < 500:
                if not headers.get("content-type", "").startswith("application/json"):
                    problem = f"{status} with content-type {headers.get('content-type')!r}"
                else:
                    problem = error_body_problem(body, status)
        if problem and send_error:
            problem += f" (our send failed: {send_error})"
        run.record(item, status, problem, latency if item.kind == "ok" else None, body)
        if item.kind == "ok" and not conn.eof and headers.get("connection", "").lower() != "close":
            conn.last_used = time.monotonic()
            pool.append(conn)
            conn = None
    except (Closed, asyncio.TimeoutError, OSError, ValueError) as e:
        what = "timed out" if isinstance(e, asyncio.TimeoutError) else (
            "closed without a response" if isinstance(e, Closed) and conn and conn.received == 0
            else repr(e))
        run.record(item, None, f"{what}{' (reused keep-alive connection)' if reused else ''}",
                   response=bytes(conn.buf) if conn else response)
    finally:
        if conn is not None:
            conn.close()


async def client(run):
    pool = []
    while not run.stop.is_set():
        i = next(run.next, None)
        if i is None:
            break
        await do_request(run, run.items[i], pool)
    for c in pool:
        c.close()


async def slowloris(run):
    """Sends a request's headers a byte every --slow-interval s; the server must answer 408
    after header_timeout_s. Then again, on a new connection, until the run ends."""
    a = run.args
    pad = int(3 * a.header_timeout / a.slow_interval) + 16  # cannot finish before the timeout
    req = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * pad + b"\r\n\r\n"
    while not run.stop.is_set():
        conn = await Conn.open(run.server.host, run.server.port)
        started = time.monotonic()
        try:
            answered = False
            for i in range(len(req)):
                if run.stop.is_set():
                    break
                if await conn.send(req[i:i + 1]) is not None:
                    answered = True  # the server closed: read what it said
                    break
                try:
                    if await conn.fill(timeout=a.slow_interval) or conn.eof:
                        answered = True
                        break
                except asyncio.TimeoutError:
                    pass
            if not answered:
                if not run.stop.is_set():
                    run.slow_results.append({"kind": "slowloris", "problem": "sent all headers without a 408"})
                break
            raw = await conn.read_to_eof()  # what fill() already took is in conn.buf
            elapsed = time.monotonic() - started
            m = re.match(rb"HTTP/1\.[01] (\d{3})", raw)
            status = int(m.group(1)) if m else None
            problem = None
            if status != 408:
                problem = f"status {status}, expected 408: {raw[:300]!r}"
            elif not a.header_timeout - 0.5 <= elapsed <= a.header_timeout + 3:
                problem = f"408 after {elapsed:.2f} s, header_timeout_s is {a.header_timeout}"
            else:
                problem = error_body_problem(raw.partition(b"\r\n\r\n")[2], 408)
            run.slow_results.append({"kind": "slowloris", "status": status, "elapsed": round(elapsed, 3),
                                     "problem": problem})
        except (asyncio.TimeoutError, OSError) as e:
            run.slow_results.append({"kind": "slowloris", "problem": repr(e)})
        finally:
            conn.close()


async def stuck_stream(run, vocab):
    """Opens a long stream with a tiny receive window and never reads it until the run ends."""
    tokens = max(16, min(128, run.args.max_model_len - 64))  # ~30 KB of events: past both socket buffers
    body = json.dumps({"prompt": "Tell me a long story", "max_tokens": tokens, "ignore_eos": True,
                       "stream": True}).encode()
    conn = await Conn.open(run.server.host, run.server.port, rcvbuf=4096)
    try:
        send_error = await conn.send(http_request("/v1/completions", body))
        await run.stop.wait()
        # Only now a look at the first bytes (the status line), then gone with unread data.
        try:
            await conn.fill(timeout=5)
        except asyncio.TimeoutError:
            pass
        ok = bytes(conn.buf).startswith(b"HTTP/1.1 200")
        run.slow_results.append({"kind": "stuck_stream", "problem": None if ok else
                                 f"no 200 status line: {bytes(conn.buf[:200])!r} (send: {send_error})"})
    finally:
        conn.close()


async def get(server, path):
    conn = await Conn.open(server.host, server.port)
    try:
        await conn.send(http_request(path, method="GET", headers=[("Connection", "close")]))
        return await read_response(conn)
    finally:
        conn.close()


def sample(fams, family, **labels):
    for s in fams[family].samples:
        if all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


async def metrics(server):
    status, _, body = await get(server, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    return {f.name: f for f in text_string_to_metric_families(body.decode("utf-8"))}


async def watchdog(run):
    while not run.stop.is_set():
        if not run.server.alive():
            run.died_at = run.done
            run.stop.set()  # clients stop taking work; what is left counts as lost
            return
        await asyncio.sleep(0.5)


def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v), max(1, math.ceil(p / 100 * len(v)))) - 1]  # nearest rank


async def soak(args, items, server, slow, deadline, vocab):
    """One whole run against a started server; returns its report."""
    run = Run(args, items, server, slow)
    t0, cpu0, srv_cpu0 = time.monotonic(), time.process_time(), server.cpu_s()
    slow_tasks = []
    if slow:
        slow_tasks = [asyncio.create_task(slowloris(run) if i % 2 == 0 else stuck_stream(run, vocab))
                      for i in range(args.slow_clients)]
    dog = asyncio.create_task(watchdog(run))
    timed_out = False
    clients = [asyncio.create_task(client(run)) for _ in range(args.clients)]
    try:
        await asyncio.wait_for(asyncio.gather(*clients), max(1.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        timed_out = True
    requests_s = time.monotonic() - t0
    cpu = {"server_s": round(server.cpu_s() - srv_cpu0, 2) if srv_cpu0 is not None and server.alive() else None,
           "driver_s": round(time.process_time() - cpu0, 2)}
    run.stop.set()
    for t in slow_tasks:  # stuck streams read their status line (5 s at most), slowloris stops
        try:
            await asyncio.wait_for(t, 15)
        except Exception as e:  # a slow client that failed is a failed check, not a crash
            run.slow_results.append({"kind": "slow", "problem": f"did not end: {e!r}"})
    dog.cancel()

    # Aborts take effect at the engine's next step: poll until idle.
    idle, gauges, fams = False, {}, None
    poll_end = time.monotonic() + args.drain_s
    while server.alive() and time.monotonic() < poll_end:
        try:
            fams = await metrics(server)
            gauges = {k: sample(fams, "minivllm:" + k) for k in
                      ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc")}
            if all(v == 0 for v in gauges.values()):
                idle = True
                break
        except (OSError, Closed, asyncio.TimeoutError, RuntimeError, ValueError) as e:
            gauges = {"error": repr(e)}
        await asyncio.sleep(0.2)
    # The CPU backend hands buffers idle for 1 s back to the kernel (runtime/backend/host_pool.hpp):
    # the idle server's sample waits for that, as a client would see it between bursts.
    await asyncio.sleep(args.settle_s)
    rss_last, hwm_last = server.rss_kib(), server.rss_kib("VmHWM")
    try:
        health = (await get(server, "/health"))[0] if server.alive() else None
    except (OSError, Closed, asyncio.TimeoutError, ValueError):
        health = None

    res = [r or {"status": None, "problem": "not finished (the run stopped)", "latency": None,
                 "request": it.payload[:300], "response": b""} for r, it in zip(run.results, items)]
    cats = {}
    for it, r in zip(items, res):
        c = cats.setdefault(it.kind, {"count": 0, "ok": 0, "failed": 0, "statuses": {}, "labels": {}})
        c["count"] += 1
        c["ok" if r["problem"] is None else "failed"] += 1
        st = str(r["status"])
        c["statuses"][st] = c["statuses"].get(st, 0) + 1
        c["labels"][it.label] = c["labels"].get(it.label, 0) + 1
    failures = [{"idx": it.idx, "kind": it.kind, "label": it.label, "status": r["status"], "problem": r["problem"],
                 "request": r["request"].decode("latin-1"), "response": r["response"].decode("latin-1")}
                for it, r in zip(items, res) if r["problem"] is not None]
    lat = [r["latency"] for it, r in zip(items, res) if it.kind == "ok" and r["latency"] is not None]
    statuses = {}
    for r in res:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    server_5xx = {}
    if fams and "minivllm:http_requests" in fams:
        server_5xx = {s.labels["status"]: s.value for s in fams["minivllm:http_requests"].samples
                      if s.labels.get("status", "").startswith("5")}
    slow_bad = [s for s in run.slow_results if s["problem"]]
    def cat_ok(k):
        return cats.get(k, {}).get("failed", 0) == 0
    # The end is the median of the last three samples (the trace's last two and the idle server
    # now): a step's transient buffers that the allocator has not yet handed back to the kernel
    # (a one-sample bump of ~30 MB) are not a leak; steady growth moves the median too.
    tail = sorted(r for r in [k for _, k in run.rss_trace[-2:]] + [rss_last] if r)
    rss_end = tail[len(tail) // 2] if tail else None
    growth = (rss_end - run.rss_first) / run.rss_first if run.rss_first and rss_end else None
    checks = {
        "server alive, /health 200": server.alive() and health == 200 and run.died_at is None,
        "no 5xx (clients and /metrics)": not any(s.startswith("5") for s in statuses) and not server_5xx,
        "well-formed requests answered completely": cat_ok("ok"),
        "disconnecting streams got 200 and data": cat_ok("disconnect"),
        "malformed requests got their 4xx and error body": cat_ok("malformed"),
        "prompts over max_model_len got 400 and error body": cat_ok("too_long"),
        "metrics idle (0 running, 0 waiting, kv 0)": idle,
        "RSS grew < 10 % (10 % of requests -> end, median of 3)": growth is not None and growth < 0.10,
        f"within --time-limit {args.time_limit} s": not timed_out,
    }
    if slow:
        checks["slow clients: 408 each cycle, stuck streams opened"] = not slow_bad and bool(run.slow_results)
    success = {}
    if fams and "minivllm:request_success" in fams:
        success = {s.labels["finished_reason"]: s.value for s in fams["minivllm:request_success"].samples}
    return {
        "server": server.label, "slow_clients": args.slow_clients if slow else 0,
        "duration_s": round(requests_s, 3), "cpu_s": cpu, "requests": len(items), "categories": cats,
        "statuses": statuses, "server_5xx": server_5xx, "request_success_total": success,
        "latency_s": {"count": len(lat), "p50": percentile(lat, 50), "p99": percentile(lat, 99),
                      "max": max(lat) if lat else None},
        "rss_kib": {"after_10pct": run.rss_first, "end": rss_last, "end_median_of_3": rss_end,
                    "growth": growth, "trace": run.rss_trace,
                    "peak_after_10pct": run.hwm_first, "peak_end": hwm_last},
        "tokens": {k: sample(fams, "minivllm:" + k) if fams and "minivllm:" + k in fams else None
                   for k in ("prompt_tokens", "generation_tokens")},
        "final_gauges": gauges, "health": health, "died_after": run.died_at,
        "slow": {"slowloris_cycles": sum(1 for s in run.slow_results if s["kind"] == "slowloris"),
                 "stuck_streams": sum(1 for s in run.slow_results if s["kind"] == "stuck_stream"),
                 "problems": slow_bad[:20]},
        "checks": checks, "failures": failures[:50], "failure_count": len(failures),
    }


def print_report(rep):
    ms = lambda x: "-" if x is None else f"{x * 1000:.0f} ms"
    print(f"\n=== {rep['server']}: {rep['requests']} requests, {rep['slow_clients']} slow clients, "
          f"{rep['duration_s']:.1f} s (CPU: server {rep['cpu_s']['server_s']} s, driver "
          f"{rep['cpu_s']['driver_s']} s) ===")
    print(f"{'category':<12}{'count':>7}{'ok':>7}{'failed':>8}  statuses")
    for k, c in sorted(rep["categories"].items()):
        st = " ".join(f"{s}:{n}" for s, n in sorted(c["statuses"].items()))
        print(f"{k:<12}{c['count']:>7}{c['ok']:>7}{c['failed']:>8}  {st}")
    lat = rep["latency_s"]
    print(f"latency (well-formed, {lat['count']}): p50 {ms(lat['p50'])}  p99 {ms(lat['p99'])}  max {ms(lat['max'])}")
    r = rep["rss_kib"]
    g = "-" if r["growth"] is None else f"{r['growth'] * 100:+.1f} %"
    print(f"RSS: {r['after_10pct']} KiB after 10 %, {r['end']} KiB at the end, {r['end_median_of_3']} KiB "
          f"the median of the last 3 ({g}); trace (done, KiB): "
          + " ".join(f"{d}:{k}" for d, k in r["trace"]))
    print(f"RSS peak (VmHWM, not checked): {r['peak_after_10pct']} KiB after 10 %, {r['peak_end']} KiB at the end")
    print(f"tokens: {rep['tokens']}")
    print(f"slow clients: {rep['slow']['slowloris_cycles']} slowloris cycles, "
          f"{rep['slow']['stuck_streams']} stuck streams; finished: {rep['request_success_total']}")
    print(f"final gauges: {rep['final_gauges']}")
    for f in rep["failures"][:8]:
        print(f"  FAILED #{f['idx']} {f['kind']}/{f['label']}: {f['problem']}\n"
              f"    request:  {f['request'][:200]!r}\n    response: {f['response'][:300]!r}")
    for s in rep["slow"]["problems"][:5]:
        print(f"  SLOW CLIENT: {s}")
    for name, ok in rep["checks"].items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")


def parse_args():
    env = os.environ.get
    src, data = env("MINIVLLM_SOURCE_DIR") or REPO, env("MINIVLLM_DATA") or os.path.join(REPO, "data")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=10000)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--slow-clients", type=int, default=4, help="even ones slowloris, odd ones stuck streams")
    p.add_argument("--slow-interval", type=float, default=1.0, help="seconds between a slowloris' bytes")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=16, help="well-formed requests ask 1..this")
    p.add_argument("--time-limit", type=float, default=1800, help="seconds for everything")
    p.add_argument("--drain-s", type=float, default=10, help="seconds /metrics has to go idle")
    p.add_argument("--settle-s", type=float, default=2, help="seconds idle before the last RSS sample")
    p.add_argument("--header-timeout", type=int, default=3)
    p.add_argument("--max-body-bytes", type=int, default=65536)
    p.add_argument("--max-header-bytes", type=int, default=16384)
    p.add_argument("--max-model-len", type=int, default=1024)
    p.add_argument("--compare-without-slow", action="store_true")
    p.add_argument("--json-out")
    p.add_argument("--bin", default=env("MINIVLLM_BIN") or os.path.join(REPO, "build", "minivllm"))
    p.add_argument("--config", default=os.path.join(src, "configs", "tiny-qwen3.toml"))
    p.add_argument("--model", default=os.path.join(data, "models", "tiny-qwen3"))
    p.add_argument("--plugin-dir", default=env("MINIVLLM_PLUGIN_DIR") or os.path.join(REPO, "build", "plugins"))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to the server")
    return p.parse_args()


async def main_async(args, servers):
    started = time.monotonic()
    deadline = started + args.time_limit
    try:
        with open(os.path.join(args.model, "config.json")) as f:
            vocab = int(json.load(f)["vocab_size"])
    except (OSError, ValueError, KeyError):
        vocab = 151936
    items = build_workload(args, vocab)
    reports = []
    for label, slow in [("with slow clients", args.slow_clients > 0)] + (
            [("without slow clients", False)] if args.compare_without_slow else []):
        server = Server(args, label)
        servers.append(server)
        server.start(timeout=max(1.0, min(120.0, deadline - time.monotonic())))
        try:
            rep = await soak(args, items, server, slow, deadline, vocab)
        finally:
            code = server.stop()
        rep["exit_code"] = code  # on SIGTERM it must be 0
        rep["checks"]["server exits 0 on SIGTERM"] = code == 0
        if code != 0:
            rep["stderr_tail"] = server.stderr_tail()
        reports.append(rep)
        print_report(rep)
    out = {"settings": {**vars(args), "server_cmd": servers[0].cmd}, "runs": reports,
           "wall_s": round(time.monotonic() - started, 3)}
    ok = all(all(r["checks"].values()) for r in reports)
    if len(reports) == 2:
        with_p, without_p = reports[0]["latency_s"]["p99"], reports[1]["latency_s"]["p99"]
        bound = None if without_p is None else 2 * without_p + 0.5
        passed = with_p is not None and bound is not None and with_p <= bound
        out["compare"] = {"p99_with_slow_s": with_p, "p99_without_slow_s": without_p,
                          "bound_s": bound, "rule": "p99 with <= 2 x p99 without + 0.5 s", "pass": passed}
        fmt = lambda x: "-" if x is None else f"{x * 1000:.0f} ms"
        print(f"\np99 with slow clients {fmt(with_p)} | without {fmt(without_p)} | bound (2 x without + 0.5 s) {fmt(bound)}")
        print(f"{'PASS' if passed else 'FAIL'}  slow clients did not stall the others")
        ok = ok and passed
    out["pass"] = ok
    print(f"\n{'PASS' if ok else 'FAIL'}: soak finished in {out['wall_s']:.1f} s")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return ok


def main():
    args = parse_args()
    servers = []
    try:
        ok = asyncio.run(main_async(args, servers))
    except KeyboardInterrupt:
        ok = False
    finally:
        for s in servers:  # the server never outlives the soak, whatever happened
            s.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
