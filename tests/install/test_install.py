#!/usr/bin/env python3
"""The installed SDK, used from outside the tree as plugin authors and embedders use it.

Installs the build into a temporary prefix (meson install --destdir), then, against that
install only (pkg-config; nothing from the source tree's headers or build):
  1. builds examples/qwen2-plugin, an out-of-tree model family;
  2. writes tiny-qwen2's random-v1 checkpoint with the installed `minivllm checkpoint` and the new
     plugin on runtime.plugin_dirs, byte-identical to tests/data/checksums.txt;
  3. loads it with `minivllm info` (every tensor used) and checks the plugin's model against tests/data/golden/tiny-qwen2.json on the CPU in float32:
     greedy continuations, the first step's top-8 tokens, the chat prompts' ids;
  4. builds actors/examples/embed_runtime.cpp against the installed embedding API and runs it;
  5. runs the installed `minivllm info` with runtime.plugin_dirs empty (the installed plugins).
Environment: MINIVLLM_BUILD_DIR, MINIVLLM_SOURCE_DIR, MINIVLLM_DATA (tests/meson.build).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = os.environ["MINIVLLM_BUILD_DIR"]
SOURCE = os.environ["MINIVLLM_SOURCE_DIR"]
DATA = os.environ["MINIVLLM_DATA"]
TEST_DATA = os.path.join(SOURCE, "tests", "data")
# Past a near-tie two correct implementations may pick differently: compare up to it.
MARGIN_TOLERANCE = 1e-3
failures = []


def run(cmd, env=None, **kw):
    started = time.monotonic()
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"FAILED ({result.returncode}): {' '.join(cmd)}\n{result.stdout[-3000:]}\n"
                 f"{result.stderr[-3000:]}")
    print(f"  ok {time.monotonic() - started:6.1f} s  {' '.join(cmd)[:150]}", flush=True)
    return result.stdout


def check(ok, what):
    print(("  PASS " if ok else "  FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    work = tempfile.mkdtemp(prefix="mv_install_")
    try:
        destdir = os.path.join(work, "destdir")
        print("== meson install --destdir", flush=True)
        run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", destdir])
        intro = json.loads(run(["meson", "introspect", "--buildoptions", BUILD]))
        options = {o["name"]: o["value"] for o in intro}
        prefix = destdir + options["prefix"]
        libdir = os.path.join(prefix, options["libdir"])
        minivllm = os.path.join(prefix, options["bindir"], "minivllm")
        # A sanitizer build (scripts/asan.sh) installs instrumented code: what links it is too.
        sanitize = options["b_sanitize"]
        sanitize_flags = [] if sanitize == "none" else ["-fsanitize=" + sanitize]
        plugin_options = [] if sanitize == "none" else ["-Db_sanitize=" + sanitize]
        env = dict(os.environ,
                   PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"),
                   PKG_CONFIG_SYSROOT_DIR=destdir,
                   LD_LIBRARY_PATH=libdir)

        print("== the Qwen2 plugin, out of tree", flush=True)
        plugin_build = os.path.join(work, "qwen2-build")
        run(["meson", "setup", plugin_build, os.path.join(SOURCE, "examples", "qwen2-plugin")] +
            plugin_options, env=env)
        run(["ninja", "-C", plugin_build], env=env)
        plugin_dirs = f'runtime.plugin_dirs=["{plugin_build}"]'

        print("== tiny-qwen2 checkpoint through the plugin", flush=True)
        model = os.path.join(work, "tiny-qwen2")
        run([minivllm, "checkpoint", "--hf-config", os.path.join(TEST_DATA, "configs", "tiny-qwen2.json"),
             "--out", model, "--set", plugin_dirs])
        want = [line.split()[0] for line in open(os.path.join(TEST_DATA, "checksums.txt"))
                if line.split()[1:2] == ["tiny-qwen2"]][0]
        got = hashlib.sha256(open(os.path.join(model, "model.safetensors"), "rb").read()).hexdigest()
        check(got == want, f"model.safetensors sha256 {got} == {want}")
        # The golden was made with the Qwen3 tokenizer files.
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(DATA, "tokenizers", "qwen3", name), model)

        info = run([minivllm, "info", "--set", f'model.path="{model}"', "--set", plugin_dirs,
                    "--set", "cache.num_blocks=16"])
        check("# unused checkpoint tensors: 0\n" in info, "the plugin loads every checkpoint tensor")

        print("== tiny-qwen2 against its golden (cpu, float32)", flush=True)
        golden = json.load(open(os.path.join(TEST_DATA, "golden", "tiny-qwen2.json")))
        config = [minivllm, "generate", "--set", f'model.path="{model}"', "--set", plugin_dirs,
                  "--set", 'model.dtype="float32"', "--set", "cache.num_blocks=128"]
        for g in golden["greedy"]:
            prefix_len = next((i for i, m in enumerate(g["margins"]) if m < MARGIN_TOLERANCE),
                              len(g["margins"]))
            out = json.loads(run(config + ["--prompt-ids", ",".join(map(str, g["ids"])),
                                           "--max-tokens", str(len(g["new_ids"])), "--temperature",
                                           "0", "--ignore-eos", "--json"]).splitlines()[0])
            check(out["token_ids"][:prefix_len] == g["new_ids"][:prefix_len],
                  f"greedy, prompt {g['prompt']}: {prefix_len} tokens")
        for f in golden["forward"]:
            out = json.loads(run(config + ["--prompt-ids", ",".join(map(str, f["ids"])),
                                           "--max-tokens", "1", "--temperature", "0",
                                           "--logprobs", "8", "--json"]).splitlines()[0])
            top = [t[0] for t in out["logprobs"][0]["top"]]
            logits = f["top_logits"][-1]
            # The ranks up to the first near-tie in the golden's logits.
            ranks = next((i + 1 for i in range(len(logits) - 1)
                          if logits[i] - logits[i + 1] < MARGIN_TOLERANCE), len(logits))
            check(top[:ranks] == f["top_ids"][-1][:ranks], f"top-{ranks} of prompt {f['prompt']}")
        for c in golden["chat"]:
            if len(c["messages"]) != 1 or c["messages"][0]["role"] != "user" or c["kwargs"]:
                continue  # `generate --chat` sends one user message with the default options
            out = json.loads(run(config + ["--chat", "--prompt", c["messages"][0]["content"],
                                           "--max-tokens", "1", "--json"]).splitlines()[0])
            check(out["prompt_token_ids"] == c["ids"], f"chat prompt ids: {c['messages'][0]['content']!r}")

        print("== the embedding example against the installed API", flush=True)
        flags = run(["pkg-config", "--cflags", "--libs", "minivllm"], env=env).split()
        example = os.path.join(work, "embed_runtime")
        run(["c++", "-std=c++20", "-O1", "-o", example,
             os.path.join(SOURCE, "actors", "examples", "embed_runtime.cpp")] + sanitize_flags + flags,
            env=env)
        toml = os.path.join(work, "tiny-qwen2.toml")
        with open(toml, "w") as t:
            t.write(f'[model]\npath = "{model}"\ndtype = "float32"\n[runtime]\nplugin_dirs = ["{plugin_build}"]\n'
                    f'[cache]\nnum_blocks = 128\n')
        text = run([example, toml, "--", "Hello, world!"], env=env)
        check("generated, finish_reason" in text, "embed_runtime answered: " + text.strip().splitlines()[-1])

        print("== the installed launcher finds the installed plugins", flush=True)
        info = run([minivllm, "info", "--set", f'model.path="{os.path.join(DATA, "models", "tiny-qwen3")}"',
                    "--set", "cache.num_blocks=16"])
        check(os.path.join(options["libdir"], "minivllm", "plugins") in info, "plugin_dirs defaulted")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed: {failures}")


if __name__ == "__main__":
    main()
