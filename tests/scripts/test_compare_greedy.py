"""scripts/gpu/compare_greedy.py, the two-GPU runs' judge of TP=2 and DP=2 outputs: on the CPU
backend's tiny-qwen3, TP=2's greedy outputs (in-process collectives) pass against TP=1's; a token
changed before a request's first near tie fails the comparison, one changed after it does not."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["MINIVLLM_SOURCE_DIR"]
SCRIPT = os.path.join(SOURCE, "scripts", "gpu", "compare_greedy.py")


def generate(out, *sets):
    cmd = [os.environ["MINIVLLM_BIN"], "generate", "--json", "--logprobs", "2", "--temperature",
           "0", "--max-tokens", "24", "--config", os.path.join(SOURCE, "configs", "tiny-qwen3.toml"),
           "--set", 'model.path="%s"' % os.path.join(os.environ["MINIVLLM_DATA"], "models", "tiny-qwen3"),
           "--set", 'runtime.plugin_dirs=["%s"]' % os.environ["MINIVLLM_PLUGIN_DIR"],
           "--set", 'runtime.log_level="warn"']
    for p in ("Hello there", "The capital of France is", "1, 2, 3,", "Once upon a time"):
        cmd += ["--prompt", p]
    for s in sets:
        cmd += ["--set", s]
    with open(out, "w") as f:
        subprocess.run(cmd, stdout=f, check=True, timeout=240)


def compare(ref, other, margin):
    return subprocess.run([sys.executable, SCRIPT, ref, other, "--margin", str(margin)],
                          capture_output=True, text=True, timeout=60)


class CompareGreedy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.tp1 = os.path.join(cls.dir.name, "tp1.jsonl")
        cls.tp2 = os.path.join(cls.dir.name, "tp2.jsonl")
        generate(cls.tp1)
        generate(cls.tp2, "parallel.tensor_parallel_size=2")

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def changed(self, name, request, token):
        rows = [json.loads(line) for line in open(self.tp1)]
        rows[request]["token_ids"][token] += 1
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        return path

    def test_tensor_parallel_outputs_pass(self):
        r = compare(self.tp1, self.tp2, 0.05)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("equal", r.stdout)

    def test_a_token_before_the_first_near_tie_fails(self):
        r = compare(self.tp1, self.changed("early.jsonl", 1, 0), 0.0)  # margin 0: no near tie
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("request 1 differs at token 0", r.stdout)

    def test_a_token_after_the_first_near_tie_passes(self):
        # With a margin above every step's, the first step is a near tie: nothing is compared.
        r = compare(self.tp1, self.changed("late.jsonl", 1, 0), 1e9)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("0 of 96 tokens compared", r.stdout)


if __name__ == "__main__":
    unittest.main()
