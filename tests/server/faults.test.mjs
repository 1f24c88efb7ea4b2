// What `minivllm serve` answers when a step fails, through the fault hook
// (tests/faults/fault_plugin.cpp: tiny Qwen3 that throws, stops answering or loses its device on
// cue tokens), driven by the official OpenAI client: the requests in the failed step get an error
// (an error event in a stream already started, a 500 otherwise), /metrics counts them, and the
// server serves the others and new requests. A lost device ends every request with an error and
// the server exits non-zero, saying why.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";

import {startServer} from "./serve.mjs";

const THROW_TOKEN = 151000;
const HANG_TOKEN = 151001;
const HANG_SECONDS = 4;
const DEVICE_LOST_TOKEN = 151002;
const MODEL = "tiny-qwen3-faults";

// tiny-qwen3's folder with the fault hook's family and cues in its config.json.
function faultModel(dir) {
  const source = path.join(process.env.MINIVLLM_DATA, "models", "tiny-qwen3");
  for (const name of fs.readdirSync(source))
    if (name !== "config.json") fs.symlinkSync(path.join(source, name), path.join(dir, name));
  const config = JSON.parse(fs.readFileSync(path.join(source, "config.json"), "utf8"));
  Object.assign(config, {
    architectures: ["FaultInjectingQwen3ForCausalLM"],
    model_type: "qwen3_fault_injecting",
    fault_throw_token_id: THROW_TOKEN,
    fault_hang_token_id: HANG_TOKEN,
    fault_hang_seconds: HANG_SECONDS,
    fault_device_lost_token_id: DEVICE_LOST_TOKEN,
  });
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(config));
}

async function metric(url, line) {
  const text = await (await fetch(url + "/metrics")).text();
  const found = text.split("\n").find((l) => l.startsWith(line + " "));
  return found === undefined ? undefined : Number(found.split(" ").pop());
}

function startFaultServer(modelDir) {
  return startServer([
    "--set", `model.path=${JSON.stringify(modelDir)}`,
    "--set", `runtime.plugin_dirs=[${JSON.stringify(process.env.MINIVLLM_FAULT_PLUGIN_DIR)}]`,
    "--set", "runtime.step_timeout_s=1", "--served-model-name", MODEL]);
}

// No retries: a retried 500 would hide the answer under test.
const openai = (server) => new OpenAI({baseURL: server.url + "/v1", apiKey: "unused", maxRetries: 0});

describe("faults in a step", () => {
  let server;
  let client;
  let modelDir;

  before(async () => {
    modelDir = fs.mkdtempSync(path.join(os.tmpdir(), "minivllm_fault_model_"));
    faultModel(modelDir);
    server = await startFaultServer(modelDir);
    client = openai(server);
  });

  after(async () => {
    if (server) assert.equal((await server.stop()).code, 0, server.stderr());
    fs.rmSync(modelDir, {recursive: true, force: true});
  });

  async function expectServed() {
    const ok = await client.completions.create({model: MODEL, prompt: "Hello", max_tokens: 4});
    assert.equal(ok.choices.length, 1);
    assert.equal(ok.usage.completion_tokens > 0, true);
  }

  test("a step that throws ends every request in it with an error and the server goes on", async () => {
    const stream = await client.completions.create(
        {model: MODEL, prompt: "Hello", max_tokens: 1000, ignore_eos: true, temperature: 0, stream: true});
    const chunks = stream[Symbol.asyncIterator]();
    assert.equal((await chunks.next()).done, false);  // it runs, and has a long way to go
    // The faulty prompt's prefill shares a step with the running stream's next token.
    await assert.rejects(
        client.completions.create({model: MODEL, prompt: [THROW_TOKEN, 1, 2, 3], max_tokens: 4}),
        (e) => e.status === 500 && /injected fault: a step with token 151000 threw/.test(e.message));
    await assert.rejects(async () => { while (!(await chunks.next()).done); },
                         (e) => /injected fault/.test(e.message));
    assert.equal(await metric(server.url, `minivllm:request_success_total{model_name="${MODEL}",finished_reason="error"}`), 2);
    await expectServed();
  });

  test("a worker that stops answering fails its step within runtime.step_timeout_s", async () => {
    const start = Date.now();
    await assert.rejects(
        client.completions.create({model: MODEL, prompt: [HANG_TOKEN, 5, 6], max_tokens: 4}),
        (e) => e.status === 500 && /did not answer step \d+ within 1000 ms \(runtime.step_timeout_s\)/.test(e.message));
    assert.ok(Date.now() - start < (HANG_SECONDS - 1) * 1000, "detected before the worker came back");
    assert.equal((await fetch(server.url + "/health")).status, 200);
    // Once the worker answers again, new requests are served.
    await new Promise((r) => setTimeout(r, Math.max(0, start + HANG_SECONDS * 1000 + 500 - Date.now())));
    await expectServed();
    for (const gauge of ["num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"])
      assert.equal(await metric(server.url, `minivllm:${gauge}{model_name="${MODEL}"}`), 0, gauge);
  });
});

test("a step that loses the device ends every request and the server exits non-zero, saying why", async () => {
  const modelDir = fs.mkdtempSync(path.join(os.tmpdir(), "minivllm_fault_model_"));
  try {
    faultModel(modelDir);
    const server = await startFaultServer(modelDir);
    const client = openai(server);
    const stream = await client.completions.create(
        {model: MODEL, prompt: "Hello", max_tokens: 1000, ignore_eos: true, temperature: 0, stream: true});
    const chunks = stream[Symbol.asyncIterator]();
    assert.equal((await chunks.next()).done, false);
    await assert.rejects(
        client.completions.create({model: MODEL, prompt: [DEVICE_LOST_TOKEN, 1, 2], max_tokens: 4}),
        (e) => e.status === 500 && /lost the device/.test(e.message));
    await assert.rejects(async () => { while (!(await chunks.next()).done); },
                         (e) => /lost the device/.test(e.message));
    const timer = setTimeout(() => server.proc.kill("SIGKILL"), 10000);
    const {code} = await server.exited;
    clearTimeout(timer);
    assert.equal(code, 1, server.stderr());
    assert.match(server.stderr(), /the engine stopped \(.*lost the device.*\): the server exits/);
  } finally {
    fs.rmSync(modelDir, {recursive: true, force: true});
  }
});
