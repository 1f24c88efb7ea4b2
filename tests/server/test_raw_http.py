#!/usr/bin/env python3
"""What `minivllm serve` answers to requests a well-behaved client library never sends.

Starts one real server (tiny Qwen3 on the CPU backend, as serve.mjs does) with tight limits:
header_timeout_s=2, max_body_bytes=65536, max_headers=20 (max_header_bytes stays at its 16 KiB
default). Bad requests go through raw sockets where http.client would refuse or fix them, and
after each one a normal completion must still be served. Every socket has a timeout.

Environment: MINIVLLM_SOURCE_DIR, MINIVLLM_BIN, MINIVLLM_DATA, MINIVLLM_PLUGIN_DIR.
Needs python3-prometheus-client and promtool (Debian packages).
"""

import http.client
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest

from prometheus_client.parser import text_string_to_metric_families

MODEL_NAME = "tiny-qwen3"
HEADER_TIMEOUT_S = 2
MAX_BODY_BYTES = 65536
MAX_HEADERS = 20
MAX_HEADER_BYTES = 16 << 10  # ServerOptions' default
SOCKET_TIMEOUT_S = 10
NORMAL_BODY = b'{"prompt":"Hi","max_tokens":2}'


def env(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"{name} is not set")
    return value


def server_args(extra):
    source, data, plugins = env("MINIVLLM_SOURCE_DIR"), env("MINIVLLM_DATA"), env("MINIVLLM_PLUGIN_DIR")
    return ["serve", "--config", os.path.join(source, "configs", "tiny-qwen3.toml"),
            "--set", "model.path=" + json.dumps(os.path.join(data, "models", MODEL_NAME)),
            "--set", "runtime.plugin_dirs=[" + json.dumps(plugins) + "]",
            "--set", 'runtime.log_level="warn"', "--port", "0", *extra]


class RawResponse:
    """One HTTP/1.1 response read off a socket (or nothing: the server closed first)."""

    def __init__(self, raw, elapsed, closed):
        self.raw = raw
        self.elapsed = elapsed
        self.closed = closed  # the server closed the connection
        self.status = None
        self.headers = {}
        self.body = b""
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            return
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
        if not m:
            return
        self.status = int(m.group(1))
        for line in lines[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.body = rest
        if "content-length" in self.headers:
            self.body = rest[:int(self.headers["content-length"])]

    def complete(self):
        if self.status is None:
            return False
        if "content-length" in self.headers:
            return len(self.body) >= int(self.headers["content-length"])
        return False

    def __repr__(self):
        return f"RawResponse(status={self.status}, closed={self.closed}, elapsed={self.elapsed:.2f}, raw={self.raw[:400]!r})"


def read_raw_response(sock, started, deadline_s, until_close=False):
    """Reads until the server closes, deadline_s passes or (unless until_close) a whole
    Content-Length response is in."""
    data = b""
    closed = False
    end = started + deadline_s
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
        if not until_close and RawResponse(data, 0, False).complete():
            break
    return RawResponse(data, time.monotonic() - started, closed)


def send_quietly(sock, data):
    """sendall that tolerates the server refusing and closing before it read everything."""
    try:
        sock.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        return False


def http_head(method, target, headers, body_len=None):
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers]
    if body_len is not None:
        lines.append(f"Content-Length: {body_len}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class RawHttpTest(unittest.TestCase):
    proc = None
    port = None
    sent_400 = 0  # 400 answers the tests got, for the http_requests_total check

    @classmethod
    def setUpClass(cls):
        if not shutil.which("promtool") and not os.path.exists("/usr/bin/promtool"):
            raise unittest.SkipTest("promtool is not installed")
        bin_path = env("MINIVLLM_BIN")
        extra = ["--set", f"server.header_timeout_s={HEADER_TIMEOUT_S}",
                 "--set", f"server.max_body_bytes={MAX_BODY_BYTES}",
                 "--set", f"server.max_headers={MAX_HEADERS}"]
        cls.stderr_file = tempfile.TemporaryFile()
        cls.proc = subprocess.Popen([bin_path, *server_args(extra)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=cls.stderr_file)
        lines = queue.Queue()

        def pump():  # keeps reading stdout so the server never blocks on it
            for line in cls.proc.stdout:
                lines.put(line.decode("utf-8", "replace"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + 60
        while True:
            left = deadline - time.monotonic()
            try:
                line = lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                line = None
                left = 0
            m = re.search(r"listening on http://([^\s:]+|\[[^\]]+\]):(\d+)", line or "")
            if m:
                cls.host, cls.port = m.group(1).strip("[]"), int(m.group(2))
                break
            if line is None or left <= 0:
                cls.proc.kill()
                cls.proc.wait(10)
                raise RuntimeError("no 'listening on' within 60 s; stderr:\n" + cls.stderr_text())

    @classmethod
    def tearDownClass(cls):
        if cls.proc is None:
            return
        cls.proc.send_signal(signal.SIGTERM)
        try:
            code = cls.proc.wait(30)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.proc.wait(10)
            raise AssertionError("the server did not stop within 30 s of SIGTERM")
        if code != 0:
            raise AssertionError(f"the server exited {code} on SIGTERM; stderr:\n{cls.stderr_text()}")

    @classmethod
    def stderr_text(cls):
        cls.stderr_file.seek(0)
        return cls.stderr_file.read().decode("utf-8", "replace")[-4000:]

    # --- helpers ---------------------------------------------------------------------------

    def assert_server_running(self):
        self.assertIsNone(self.proc.poll(), f"the server died; stderr:\n{self.stderr_text()}")

    def request(self, method, path, body=None, headers=None, timeout=SOCKET_TIMEOUT_S):
        """A normal request through http.client: (status, headers, body bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            h = dict(headers or {})
            if body is not None and "Content-Type" not in h:
                h["Content-Type"] = "application/json"
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            if r.status == 400:
                type(self).sent_400 += 1
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def post_json(self, body, path="/v1/completions", content_type="application/json"):
        if isinstance(body, str):
            body = body.encode("utf-8")
        return self.request("POST", path, body, {"Content-Type": content_type})

    def raw(self, data, deadline_s=SOCKET_TIMEOUT_S):
        """Sends bytes on a fresh connection and reads what comes back until the server closes
        it (every use is a refusal or says Connection: close)."""
        with socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT_S) as s:
            started = time.monotonic()
            send_quietly(s, data)
            r = read_raw_response(s, started, deadline_s, until_close=True)
        self.count_400(r)
        return r

    def count_400(self, r):
        if r.status == 400:
            type(self).sent_400 += 1

    def assert_openai_error(self, body, status, param=None):
        """body is OpenAI's error JSON; param, where given, names the field."""
        try:
            doc = json.loads(body)
        except ValueError:
            self.fail(f"a {status} answer whose body is not JSON: {body[:300]!r}")
        self.assertIsInstance(doc, dict, body)
        self.assertIn("error", doc, body)
        err = doc["error"]
        self.assertIsInstance(err, dict, body)
        for key in ("message", "type", "param", "code"):
            self.assertIn(key, err, f"error.{key} is missing: {body!r}")
        self.assertIsInstance(err["message"], str)
        self.assertTrue(err["message"], body)
        self.assertIsInstance(err["type"], str)
        self.assertTrue(err["type"], body)
        self.assertEqual(err["code"], status, body)
        if param is not None:
            self.assertIsInstance(err["param"], str, f"error.param should name {param!r}: {body!r}")
            self.assertTrue(err["param"] == param or err["param"].startswith(param + "[")
                            or err["param"].startswith(param + "."),
                            f"error.param {err['param']!r} does not name {param!r}: {body!r}")
        return err

    def assert_raw_error(self, r, status):
        self.assertEqual(r.status, status, repr(r))
        self.assertTrue(r.headers.get("content-type", "").startswith("application/json"), repr(r))
        self.assert_openai_error(r.body, status)
        self.assertEqual(r.headers.get("connection", "").lower(), "close", repr(r))
        self.assertTrue(r.closed, f"the connection stayed open after the refusal: {r!r}")

    def assert_alive(self, max_latency_s=None):
        """A normal completion still works (and the server process still runs)."""
        self.assert_server_running()
        started = time.monotonic()
        status, headers, body = self.post_json(NORMAL_BODY)
        latency = time.monotonic() - started
        self.assertEqual(status, 200, body[:500])
        doc = json.loads(body)
        self.assertEqual(doc.get("object"), "text_completion", doc)
        self.assertEqual(len(doc["choices"]), 1, doc)
        self.assertEqual(doc["usage"]["completion_tokens"], 2, doc)
        if max_latency_s is not None:
            self.assertLess(latency, max_latency_s, "a normal request was slow")
        return latency

    def metrics_text(self):
        status, headers, body = self.request("GET", "/metrics")
        self.assertEqual(status, 200, body[:500])
        self.assertTrue(headers.get("content-type", "").startswith("text/plain"), headers)
        return body.decode("utf-8")

    def metric_families(self, text=None):
        return {f.name: f for f in text_string_to_metric_families(text or self.metrics_text())}

    @staticmethod
    def sample_value(families, family, sample=None, **labels):
        fam = families[family]
        want = {"model_name": MODEL_NAME, **labels}
        for s in fam.samples:
            if (sample is None or s.name == sample) and all(s.labels.get(k) == v for k, v in want.items()):
                return s.value
        raise KeyError(f"no sample {sample or family}{want} in {fam.samples}")

    # --- 1 -------------------------------------------------------------------------------------

    def test_01_broken_json(self):
        for body in ('{"prompt": "x",', "[1,2]", '"str"', "", "{", "nul", '{"prompt":"x"}}'):
            with self.subTest(body=body):
                status, _, answer = self.post_json(body)
                self.assertEqual(status, 400, answer[:300])
                self.assert_openai_error(answer, 400)
                self.assert_alive()

    # --- 2 -------------------------------------------------------------------------------------

    def test_02_wrong_types_and_numbers(self):
        cases = [
            ('{"prompt":"Hi","max_tokens":"x"}', "max_tokens"),
            ('{"prompt":"Hi","max_tokens":-5}', "max_tokens"),
            ('{"prompt":"Hi","max_tokens":99999999999999999999999}', "max_tokens"),
            ('{"prompt":"Hi","n":1e300}', "n"),
            ('{"prompt":"Hi","n":-1}', "n"),
            ('{"prompt":"Hi","temperature":"hot"}', "temperature"),
            ('{"prompt":"Hi","seed":1.5}', "seed"),
            ('{"prompt":"Hi","logprobs":-1}', "logprobs"),
            ('{"prompt":{}}', "prompt"),
            ('{"prompt":[]}', "prompt"),
            ('{"prompt":"Hi","stop":[1]}', "stop"),
        ]
        for body, param in cases:
            with self.subTest(body=body):
                status, _, answer = self.post_json(body)
                self.assertEqual(status, 400, answer[:300])
                self.assert_openai_error(answer, 400, param=param)
                self.assert_alive()

    # --- 3 -------------------------------------------------------------------------------------

    def test_03_invalid_utf8(self):
        status, _, answer = self.post_json(b'{"prompt":"\xff\xfe","max_tokens":2}')
        self.assertEqual(status, 400, answer[:300])
        self.assert_openai_error(answer, 400)
        self.assert_alive()
        # A lone surrogate by escape: refused or answered, but the server goes on.
        for body in (b'{"prompt":"\\ud800","max_tokens":2}', b'{"prompt":"a\\udfffb","max_tokens":2}'):
            with self.subTest(body=body):
                status, _, answer = self.post_json(body)
                self.assertIn(status, (200, 400), answer[:300])
                if status == 400:
                    self.assert_openai_error(answer, 400)
                else:
                    json.loads(answer)
                self.assert_alive()
        # Invalid UTF-8 in a chat message too.
        status, _, answer = self.post_json(
            b'{"messages":[{"role":"user","content":"\xc3\x28"}],"max_tokens":2}', "/v1/chat/completions")
        self.assertEqual(status, 400, answer[:300])
        self.assert_openai_error(answer, 400)
        self.assert_alive()

    # --- 4 -------------------------------------------------------------------------------------

    def test_04_truncated_body(self):
        head = http_head("POST", "/v1/completions", [("Content-Type", "application/json")], 100)
        r = self.raw(head + b'{"prompt":"Hi","max_', deadline_s=6)
        self.assertTrue(r.closed, f"not closed within 6 s: {r!r}")
        self.assertGreaterEqual(r.elapsed, HEADER_TIMEOUT_S - 0.5, f"refused before the header timeout: {r!r}")
        self.assertLess(r.elapsed, 5, f"took too long: {r!r}")
        self.assert_raw_error(r, 408)
        self.assert_alive()

    # --- 5 -------------------------------------------------------------------------------------

    def test_05_wrong_content_type(self):
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            with self.subTest(content_type=ctype):
                status, _, answer = self.post_json(NORMAL_BODY, content_type=ctype)
                self.assertEqual(status, 400, answer[:300])
                self.assert_openai_error(answer, 400)
                self.assert_alive()
        # application/json with parameters, and no Content-Type at all, are fine.
        status, _, answer = self.post_json(NORMAL_BODY, content_type="application/json; charset=utf-8")
        self.assertEqual(status, 200, answer[:300])
        head = http_head("POST", "/v1/completions", [("Connection", "close")], len(NORMAL_BODY))
        r = self.raw(head + NORMAL_BODY)
        self.assertEqual(r.status, 200, repr(r))

    # --- 6 -------------------------------------------------------------------------------------

    def test_06_body_over_limit(self):
        # Content-Length says too much: refused on the headers alone.
        head = http_head("POST", "/v1/completions", [("Content-Type", "application/json")], 100000)
        r = self.raw(head + b'{"prompt":"' + b"a" * 1000)
        self.assert_raw_error(r, 413)
        self.assertLess(r.elapsed, 2, repr(r))
        self.assert_alive()

        # Chunked: no length up front, the chunks go past the limit.
        big = b'{"prompt":"' + b"a" * (MAX_BODY_BYTES + 10000) + b'","max_tokens":2}'
        head = http_head("POST", "/v1/completions", [("Content-Type", "application/json"),
                                                     ("Transfer-Encoding", "chunked")])
        with socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT_S) as s:
            started = time.monotonic()
            ok = send_quietly(s, head)
            for i in range(0, len(big), 8192):
                piece = big[i:i + 8192]
                if not ok or not send_quietly(s, b"%x\r\n%s\r\n" % (len(piece), piece)):
                    break
            else:
                send_quietly(s, b"0\r\n\r\n")
            r = read_raw_response(s, started, SOCKET_TIMEOUT_S, until_close=True)
        self.assert_raw_error(r, 413)
        self.assert_alive()

        # Just under the limit, chunked, is served (a 400 for the bad max_tokens, not 413).
        small = b'{"prompt":"Hi","max_tokens":0}'
        with socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT_S) as s:
            started = time.monotonic()
            s.sendall(http_head("POST", "/v1/completions", [("Transfer-Encoding", "chunked"),
                                                             ("Connection", "close")])
                      + b"%x\r\n%s\r\n0\r\n\r\n" % (len(small), small))
            r = read_raw_response(s, started, SOCKET_TIMEOUT_S)
        self.count_400(r)
        self.assertEqual(r.status, 400, repr(r))
        self.assert_openai_error(r.body, 400, param="max_tokens")
        self.assert_alive()

    # --- 7 -------------------------------------------------------------------------------------

    def test_07_headers_over_limit(self):
        r = self.raw(http_head("GET", "/health", [("X-Big", "a" * (20 << 10))]))
        self.assert_raw_error(r, 431)
        self.assert_alive()

        r = self.raw(http_head("GET", "/health", [(f"X-H{i}", "v") for i in range(30)]))
        self.assert_raw_error(r, 431)
        self.assert_alive()

        # Exactly max_headers fields (Host included) pass.
        r = self.raw(http_head("GET", "/health", [("Connection", "close")] +
                               [(f"X-H{i}", "v") for i in range(MAX_HEADERS - 2)]))
        self.assertEqual(r.status, 200, repr(r))

        # Malformed HTTP: 400 JSON, then closed.
        for data in (b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                     b"GET /health HTTP/1.1\r\nBad Header\r\n\r\n"):
            with self.subTest(data=data):
                r = self.raw(data)
                self.assert_raw_error(r, 400)
                self.assert_alive()

    # --- 8 -------------------------------------------------------------------------------------

    def test_08_slowloris(self):
        request = http_head("GET", "/health", [("User-Agent", "slow"), ("Accept", "*/*")])
        result = {}

        def slow_client():
            s = socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT_S)
            started = time.monotonic()
            data = b""
            closed = False
            try:
                for byte in request:
                    if not send_quietly(s, bytes([byte])):
                        closed = True
                        break
                    readable, _, _ = select.select([s], [], [], 1.0)
                    if readable:
                        r = read_raw_response(s, started, 6, until_close=True)
                        data, closed = r.raw, r.closed
                        break
                    if time.monotonic() - started > 8:
                        break
                result["response"] = RawResponse(data, time.monotonic() - started, closed)
            except Exception as e:  # reported by the main thread
                result["error"] = e
            finally:
                s.close()

        t = threading.Thread(target=slow_client, daemon=True)
        t.start()
        time.sleep(0.3)
        latencies = []
        while t.is_alive() and len(latencies) < 20:
            latencies.append(self.assert_alive(max_latency_s=2))
            time.sleep(0.2)
        t.join(12)
        self.assertFalse(t.is_alive(), "the slow client hung")
        self.assertNotIn("error", result, result.get("error"))
        r = result["response"]
        self.count_400(r)
        self.assertTrue(r.closed, f"the slow connection was not closed: {r!r}")
        self.assertGreaterEqual(r.elapsed, HEADER_TIMEOUT_S - 0.5, repr(r))
        self.assertLess(r.elapsed, 4.5, repr(r))
        self.assert_raw_error(r, 408)
        self.assertGreaterEqual(len(latencies), 3, "too few normal requests ran meanwhile")
        self.assertLess(max(latencies), 2, latencies)
        self.assert_alive()

    # --- 9 -------------------------------------------------------------------------------------

    def test_09_disconnect_mid_stream(self):
        before = self.metric_families()
        aborts_before = self.sample_value(before, "minivllm:request_success", finished_reason="abort")
        body = json.dumps({"prompt": "Go", "max_tokens": 3000, "ignore_eos": True, "stream": True}).encode()
        head = http_head("POST", "/v1/completions", [("Content-Type", "application/json")], len(body))
        s = socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT_S)
        try:
            s.sendall(head + body)
            data = b""
            deadline = time.monotonic() + SOCKET_TIMEOUT_S
            while b"data:" not in data.partition(b"\r\n\r\n")[2]:
                self.assertLess(time.monotonic(), deadline, f"no data: chunk within 10 s: {data[:500]!r}")
                chunk = s.recv(65536)
                self.assertTrue(chunk, f"closed before the first chunk: {data[:500]!r}")
                data += chunk
            first = RawResponse(data, 0, False)
            self.assertEqual(first.status, 200, data[:500])
            self.assertEqual(first.headers.get("transfer-encoding", "").lower(), "chunked", data[:500])
            self.assertTrue(first.headers.get("content-type", "").startswith("text/event-stream"), data[:500])
            self.assertNotIn(b"[DONE]", data, "the request ended before the disconnect")
        finally:
            # Abruptly: RST instead of FIN.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()

        deadline = time.monotonic() + 5
        while True:
            fams = self.metric_families()
            running = self.sample_value(fams, "minivllm:num_requests_running")
            waiting = self.sample_value(fams, "minivllm:num_requests_waiting")
            kv = self.sample_value(fams, "minivllm:kv_cache_usage_perc")
            if running == 0 and waiting == 0 and kv == 0:
                break
            self.assertLess(time.monotonic(), deadline,
                            f"5 s after the disconnect: running={running} waiting={waiting} kv_cache_usage={kv}")
            time.sleep(0.1)
        aborts = self.sample_value(fams, "minivllm:request_success", finished_reason="abort")
        self.assertGreaterEqual(aborts, 1)
        self.assertGreaterEqual(aborts, aborts_before + 1, "the disconnect was not counted as an abort")
        self.assert_alive()

    # --- 10 ------------------------------------------------------------------------------------

    def test_10_metrics_families(self):
        status, _, answer = self.post_json("{")  # at least one 400 even if run alone
        self.assertEqual(status, 400)
        text = self.metrics_text()
        fams = self.metric_families(text)
        for name in fams:
            self.assertTrue(name.startswith("minivllm:"), name)
        expected = {
            "num_requests_running": "gauge", "num_requests_waiting": "gauge", "kv_cache_usage_perc": "gauge",
            "prompt_tokens": "counter", "generation_tokens": "counter", "prefix_cache_queries": "counter",
            "prefix_cache_hits": "counter", "request_success": "counter", "http_requests": "counter",
            "time_to_first_token_seconds": "histogram", "inter_token_latency_seconds": "histogram",
            "e2e_request_latency_seconds": "histogram", "request_queue_time_seconds": "histogram",
        }
        for short, kind in expected.items():
            name = "minivllm:" + short
            with self.subTest(family=name):
                self.assertIn(name, fams, sorted(fams))
                self.assertEqual(fams[name].type, kind)
                self.assertTrue(fams[name].samples, name)
                for s in fams[name].samples:
                    self.assertEqual(s.labels.get("model_name"), MODEL_NAME, s)
                    self.assertGreaterEqual(s.value, 0, s)
        for short in ("time_to_first_token_seconds", "inter_token_latency_seconds",
                      "e2e_request_latency_seconds", "request_queue_time_seconds"):
            fam = fams["minivllm:" + short]
            buckets = [s for s in fam.samples if s.name.endswith("_bucket")]
            self.assertEqual(buckets[-1].labels["le"], "+Inf", short)
            values = [s.value for s in buckets]
            self.assertEqual(values, sorted(values), f"{short} buckets are not cumulative")
            count = self.sample_value(fams, fam.name, fam.name + "_count")
            self.assertEqual(buckets[-1].value, count, short)
        self.assertGreater(self.sample_value(fams, "minivllm:generation_tokens"), 0)
        reasons = {s.labels["finished_reason"] for s in fams["minivllm:request_success"].samples}
        self.assertTrue({"stop", "length", "abort"} <= reasons, reasons)
        http_400 = self.sample_value(fams, "minivllm:http_requests", status="400")
        self.assertGreaterEqual(http_400, type(self).sent_400)
        self.assertGreaterEqual(self.sample_value(fams, "minivllm:http_requests", status="200"), 1)

    # --- 11 ------------------------------------------------------------------------------------

    def test_11_promtool(self):
        text = self.metrics_text()
        promtool = shutil.which("promtool") or "/usr/bin/promtool"
        p = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        # Exit 0: clean; 3: lint problems only; anything else (1: parse error) fails.
        self.assertIn(p.returncode, (0, 3), out)
        # promtool 2.x prints "<metric> metric names should not contain ':'" for each family; any
        # other line is a real problem.
        colon = re.compile(r"^minivllm:[a-zA-Z_][a-zA-Z0-9_:]* metric names should not contain ':'$")
        problems = [line for line in out.splitlines() if line.strip() and not colon.match(line.strip())]
        self.assertEqual(problems, [], out)

    # --- 12 ------------------------------------------------------------------------------------

    def test_12_unknown_path_and_method(self):
        for method, path in (("GET", "/nope"), ("POST", "/v1/nothing"), ("GET", "/v1/completions/x")):
            with self.subTest(method=method, path=path):
                status, headers, answer = self.request(method, path, b"{}" if method == "POST" else None)
                self.assertEqual(status, 404, answer[:300])
                self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
                self.assert_openai_error(answer, 404)
                self.assert_alive()
        for method, path in (("GET", "/v1/completions"), ("GET", "/v1/chat/completions"),
                             ("DELETE", "/v1/completions"), ("POST", "/v1/models"), ("PUT", "/metrics")):
            with self.subTest(method=method, path=path):
                status, headers, answer = self.request(method, path, b"{}" if method in ("POST", "PUT") else None)
                self.assertEqual(status, 405, answer[:300])
                self.assert_openai_error(answer, 405)
                self.assert_alive()

    # --- 13 ------------------------------------------------------------------------------------

    def run_streams(self, count):
        """count streams at once; each one's result: status, done ([DONE] came), max_gap (the
        longest wait between two reads after the first), seconds (the whole stream)."""
        body = json.dumps({"prompt": "Count with me", "max_tokens": 6, "ignore_eos": True,
                           "stream": True}).encode()
        streams = [{} for _ in range(count)]

        def stream(i):
            r = streams[i]
            try:
                started = time.monotonic()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=SOCKET_TIMEOUT_S * 3)
                conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                r["status"] = resp.status
                last, gaps, buf, done = time.monotonic(), [], b"", False
                while not done:
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now
                    buf += chunk
                    done = b"data: [DONE]" in buf
                r["done"], r["max_gap"] = done, max(gaps[1:], default=0.0)
                r["seconds"] = time.monotonic() - started
                conn.close()
            except Exception as e:  # reported by the caller
                r["error"] = repr(e)

        threads = [threading.Thread(target=stream, args=(i,), daemon=True) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for i, r in enumerate(streams):
            self.assertNotIn("error", r, f"stream {i}: {r}")
            self.assertEqual(r.get("status"), 200, f"stream {i}: {r}")
            self.assertTrue(r.get("done"), f"stream {i} did not end with [DONE]: {r}")
        return streams

    def test_13_max_num_seqs_streams_and_eight_slow_clients(self):
        """scheduler.max_num_seqs (64 in tiny-qwen3.toml) streams at once, first alone, then
        beside 8 clients that send their headers a byte every 0.4 s (held for the 2 s header
        timeout, then 408). Had the slow ones held a thread the streams need, the streams would
        wait out that timeout; they must not take more than a second longer than alone (the
        comparison, not a fixed bound, since sanitizer builds run several times slower)."""
        alone = self.run_streams(64)
        slow_results = [None] * 8

        def slow_client(i):
            with socket.create_connection((self.host, self.port), timeout=SOCKET_TIMEOUT_S) as s:
                started = time.monotonic()
                for byte in http_head("GET", "/v1/models", [("X-Slow", "y" * 40)]):
                    if not send_quietly(s, bytes([byte])) or time.monotonic() - started > 6:
                        break
                    time.sleep(0.4)
                slow_results[i] = read_raw_response(s, started, 8, until_close=True)

        slow = [threading.Thread(target=slow_client, args=(i,), daemon=True) for i in range(8)]
        for t in slow:
            t.start()
        time.sleep(0.2)
        beside = self.run_streams(64)
        for t in slow:
            t.join(12)
        longest_alone = max(r["seconds"] for r in alone)
        longest_beside = max(r["seconds"] for r in beside)
        print(f"64 streams: longest {longest_alone:.2f} s alone, {longest_beside:.2f} s beside "
              f"8 slow clients; longest gap {max(r['max_gap'] for r in alone):.2f} s and "
              f"{max(r['max_gap'] for r in beside):.2f} s")
        self.assertLess(longest_beside, longest_alone * 1.5 + 1.0, "the slow clients stalled the streams")
        for i, r in enumerate(slow_results):
            self.assertIsNotNone(r, f"slow client {i} hung")
            self.assert_raw_error(r, 408)
        self.assert_alive()

if __name__ == "__main__":
    unittest.main(verbosity=2)
