#!/usr/bin/env python3
"""Workers in other processes (parallel.remote_workers, `minivllm worker`), on 127.0.0.1.

The tiny Qwen3 model on the CPU backend, tensor-parallel over two ranks:
- an engine with no local rank and two workers, and one with a local rank and one worker, give
  the same greedy and seeded outputs as the ranks in one process;
- a worker with a wrong token is refused and the refusal logged; an engine missing a worker
  fails at parallel.join_timeout_s naming the rank;
- under `minivllm serve`, killing the worker mid-stream fails that request naming the worker (no
  hang), new requests get 503 until a worker joins again, no KV block is left in use, and the
  next request after the restart gives the output from before;
- with two data-parallel replicas, one of them in the worker, losing the worker fails only that
  replica's request; the other replica takes every new request (none gets 503) until a worker
  joins in the lost one's place, also when the worker is lost while its replica is idle.
Every wait is bounded.

Environment: MINIVLLM_SOURCE_DIR, MINIVLLM_BIN, MINIVLLM_DATA, MINIVLLM_PLUGIN_DIR.
"""

import http.client
import json
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest

WAIT_S = 60  # for any one thing to happen


def env(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"{name} is not set")
    return value


def config_args(extra=()):
    source, data, plugins = env("MINIVLLM_SOURCE_DIR"), env("MINIVLLM_DATA"), env("MINIVLLM_PLUGIN_DIR")
    return ["--config", os.path.join(source, "configs", "tiny-qwen3.toml"),
            "--set", "model.path=" + json.dumps(os.path.join(data, "models", "tiny-qwen3")),
            "--set", "runtime.plugin_dirs=[" + json.dumps(plugins) + "]",
            "--set", "parallel.tensor_parallel_size=2", *extra]


def remote_args(token_file, remote, timeout_s=60):
    return ["--set", f"parallel.remote_workers={remote}",
            "--set", 'parallel.listen="127.0.0.1:0"',
            "--set", "parallel.join_token_file=" + json.dumps(token_file),
            "--set", f"parallel.join_timeout_s={timeout_s}"]


class Process:
    """A minivllm process whose stderr lines are collected as they come."""

    def __init__(self, args):
        self.proc = subprocess.Popen([env("MINIVLLM_BIN"), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.stderr = []
        self.stdout = []
        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stdout, self.stdout), daemon=True).start()

    def _read(self, stream, into):
        for line in stream:
            into.append(line)
            self.lines.put(line)

    def wait_for(self, pattern, timeout=WAIT_S):
        """The first match of `pattern` in a line from now on, printed or not yet."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s; "
                                     f"stderr:\n{''.join(self.stderr)}")
            try:
                line = self.lines.get(timeout=min(left, 1))
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    raise AssertionError(f"exited ({self.proc.returncode}) before {pattern!r}; "
                                         f"stderr:\n{''.join(self.stderr)}")
                continue
            m = re.search(pattern, line)
            if m:
                return m

    def finish(self, timeout=WAIT_S):
        self.proc.wait(timeout=timeout)
        time.sleep(0.1)  # the readers' last lines
        return self.proc.returncode

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


PROMPTS = ["Hello there", "The capital of France is", "1, 2, 3,"]


def generate_args():
    args = ["generate", "--json", "--max-tokens", "12"]
    for p in PROMPTS:
        args += ["--prompt", p]
    return args


def worker(address, token_file):
    return Process(["worker", "--connect", address, "--token-file", token_file])


class RemoteWorkersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.token = os.path.join(cls.tmp.name, "token")
        with open(cls.token, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        cls.bad_token = os.path.join(cls.tmp.name, "bad-token")
        with open(cls.bad_token, "w") as f:
            f.write(os.urandom(24).hex() + "\n")

    def setUp(self):
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.stop()

    def start(self, args):
        p = Process(args)
        self.procs.append(p)
        return p

    def outputs(self, proc):
        self.assertEqual(proc.finish(), 0, "".join(proc.stderr))
        return [json.loads(line) for line in proc.stdout if line.strip()]

    def run_with_workers(self, extra, remote):
        engine = self.start(generate_args() + config_args(extra + remote_args(self.token, remote)))
        address = engine.wait_for(r"remote workers? on (\S+) \(parallel.listen\)").group(1)
        for _ in range(remote):
            self.start(["worker", "--connect", address, "--token-file", self.token])
        return self.outputs(engine)

    def check_same_as_in_process(self, extra):
        expected = self.outputs(self.start(generate_args() + config_args(extra)))
        self.assertEqual(len(expected), len(PROMPTS))
        for remote in (2, 1):
            with self.subTest(remote_workers=remote):
                got = self.run_with_workers(extra, remote)
                self.assertEqual([o["token_ids"] for o in got], [o["token_ids"] for o in expected])
                self.assertEqual([o["text"] for o in got], [o["text"] for o in expected])

    def test_greedy_outputs_equal_in_process(self):
        self.check_same_as_in_process(["--temperature", "0"])

    def test_seeded_outputs_equal_in_process(self):
        self.check_same_as_in_process(["--temperature", "0.8", "--seed", "7"])

    def test_a_single_rank_in_a_worker_process(self):
        # TP=1, no local rank: the worker's configuration has no other rank to wait for.
        extra = ["--temperature", "0", "--set", "parallel.tensor_parallel_size=1"]
        expected = self.outputs(self.start(generate_args() + config_args(extra)))
        got = self.run_with_workers(extra, 1)
        self.assertEqual([o["token_ids"] for o in got], [o["token_ids"] for o in expected])

    def test_wrong_token_refused_and_missing_rank_named(self):
        engine = self.start(generate_args() + config_args(remote_args(self.token, 1, timeout_s=4)))
        address = engine.wait_for(r"remote worker on (\S+) \(parallel.listen\)").group(1)
        bad = self.start(["worker", "--connect", address, "--token-file", self.bad_token])
        self.assertNotEqual(bad.finish(), 0)
        self.assertIn("the join token does not match", "".join(bad.stderr))
        engine.wait_for(r"WARN .*refused a worker .*join token does not match")
        self.assertNotEqual(engine.finish(), 0)
        err = "".join(engine.stderr)
        self.assertIn("parallel.join_timeout_s (4 s) passed with 0 of 1 remote workers joined", err)
        self.assertIn("missing: worker rank 1", err)
        self.assertIn("--connect " + address, err)

    def serve_with_a_worker(self, extra=()):
        """`minivllm serve` with one remote worker joined: the server, the worker, the address
        workers join at, its port, and post(body), which sends a completion request."""
        server = self.start(["serve", "--port", "0"] +
                            config_args(list(extra) + remote_args(self.token, 1)))
        address = server.wait_for(r"remote worker on (\S+) \(parallel.listen\)").group(1)
        first = self.start(["worker", "--connect", address, "--token-file", self.token])
        port = int(server.wait_for(r"listening on http://[^:]+:(\d+)").group(1))

        def post(body):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
            self.addCleanup(c.close)
            c.request("POST", "/v1/completions", json.dumps(body),
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            r.connection = c  # closing it (not the response) is what the server sees
            return r

        return server, first, address, port, post

    def test_lost_worker_fails_its_requests_until_one_joins_again(self):
        server, first, address, port, post = self.serve_with_a_worker()
        greedy = {"prompt": "Hello there", "max_tokens": 16, "temperature": 0}
        r = post(greedy)
        self.assertEqual(r.status, 200)
        before = json.loads(r.read())["choices"][0]["text"]

        r = post({"prompt": "Count:", "max_tokens": 3500, "ignore_eos": True, "temperature": 0,
                  "stream": True})
        self.assertEqual(r.status, 200)
        self.assertTrue(r.readline().startswith(b"data: "))  # it runs
        first.proc.kill()
        rest = r.read().decode()  # ends: no hang (the socket's timeout bounds it)
        self.assertIn("worker rank 1 (remote: pid %d" % first.proc.pid, rest)
        self.assertIn("was lost", rest)
        self.assertNotIn('"finish_reason":"length"', rest)

        server.wait_for(r"worker rank 1 .* was lost")
        r = post(greedy)
        body = r.read().decode()
        self.assertEqual(r.status, 503, body)
        self.assertIn("waits for a worker to join in its place", body)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
        self.addCleanup(c.close)
        c.request("GET", "/metrics")
        metrics = c.getresponse().read().decode()
        usage = re.search(r"^\S*kv_cache_usage_perc\S* (\S+)$", metrics, re.M)
        self.assertIsNotNone(usage, metrics)
        self.assertEqual(float(usage.group(1)), 0.0)  # no block left in use

        self.start(["worker", "--connect", address, "--token-file", self.token])
        server.wait_for(r"the worker group is whole again")
        server.wait_for(r"replica 0 takes requests again")
        r = post(greedy)
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(r.read())["choices"][0]["text"], before)

    def test_lost_worker_leaves_the_other_replica_serving(self):
        # Replica 0's rank is local, replica 1's is the worker (the last rank).
        server, first, address, port, post = self.serve_with_a_worker(
            ["--set", "parallel.tensor_parallel_size=1", "--set", "parallel.data_parallel_size=2"])
        greedy = {"prompt": "Hello there", "max_tokens": 16, "temperature": 0}
        r = post(greedy)
        self.assertEqual(r.status, 200)
        before = json.loads(r.read())["choices"][0]["text"]

        long = {"prompt": "Count:", "max_tokens": 3500, "ignore_eos": True, "temperature": 0,
                "stream": True}
        on_local = post(long)  # both idle: replica 0
        self.assertTrue(on_local.readline().startswith(b"data: "))
        on_worker = post(dict(long, prompt="Count again:"))  # the idler one: replica 1
        self.assertTrue(on_worker.readline().startswith(b"data: "))
        first.proc.kill()
        rest = on_worker.read().decode()
        self.assertIn("was lost", rest)
        server.wait_for(r"worker rank 0 .* was lost")

        # Replica 1 has no load and replica 0 the long stream, yet every request goes to 0.
        for _ in range(3):
            r = post(greedy)
            body = r.read().decode()
            self.assertEqual(r.status, 200, body)
            self.assertEqual(json.loads(body)["choices"][0]["text"], before)
        line = on_local.readline()
        while line.strip() == b"":  # the blank line after each event
            line = on_local.readline()
        self.assertTrue(line.startswith(b"data: "), line)  # still streaming
        on_local.connection.close()  # the client goes: the request is aborted

        second = self.start(["worker", "--connect", address, "--token-file", self.token])
        server.wait_for(r"the worker group is whole again")
        server.wait_for(r"replica 1 takes requests again")
        for _ in range(2):
            r = post(greedy)
            self.assertEqual(r.status, 200)
            self.assertEqual(json.loads(r.read())["choices"][0]["text"], before)

        # A worker lost while its replica is idle: the engine hears of it from the join door at
        # once. With replica 0 busy, the idle replica 1 would take the next request; it goes to
        # replica 0 and is answered.
        self.wait_until_idle(port)
        busy = post(dict(long, prompt="Count once more:"))  # both idle: replica 0
        self.assertTrue(busy.readline().startswith(b"data: "))
        second.proc.kill()
        server.wait_for(r"remote: pid %d .* was lost" % second.proc.pid)
        r = post(greedy)
        body = r.read().decode()
        self.assertEqual(r.status, 200, body)
        self.assertEqual(json.loads(body)["choices"][0]["text"], before)
        busy.connection.close()

    def wait_until_idle(self, port):
        """Until /metrics shows no request running or waiting (aborts end at a step)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
            c.request("GET", "/metrics")
            metrics = c.getresponse().read().decode()
            c.close()
            counts = re.findall(r"^\S*num_requests_(?:running|waiting)\S* (\S+)$", metrics, re.M)
            self.assertEqual(len(counts), 2, metrics)
            if all(float(x) == 0 for x in counts):
                return
            self.assertLess(time.monotonic(), deadline, metrics)
            time.sleep(0.05)

if __name__ == "__main__":
    unittest.main()
