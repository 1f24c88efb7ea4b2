// minivllm serve driven by the official OpenAI client (npm `openai` 6.x): every endpoint,
// streaming and not, chat and completions, n, seed, stop, logprobs, usage and include_usage, and
// the 400/401/404/413/503 answers. The tiny Qwen3 model on the CPU backend.
import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";

import {startServer} from "./serve.mjs";

let server;
let client;

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function getJson(path, init = {}) {
  const headers = init.body ? {"Content-Type": "application/json"} : {};
  const res = await fetch(server.url + path, {headers, ...init});
  return {status: res.status, body: await res.json()};
}

// The joined text of each choice of a completions (or chat) stream, and where finish_reason came.
function joined(chunks, chat = false) {
  const text = {};
  const finish = {};
  chunks.forEach((c, i) => {
    for (const choice of c.choices) {
      const piece = chat ? (choice.delta.content ?? "") : choice.text;
      text[choice.index] = (text[choice.index] ?? "") + piece;
      if (choice.finish_reason !== null) {
        assert.equal(finish[choice.index], undefined, "finish_reason came twice for a choice");
        finish[choice.index] = {reason: choice.finish_reason, chunk: i};
      }
    }
  });
  return {text, finish};
}

before(async () => {
  server = await startServer();
  client = new OpenAI({baseURL: server.url + "/v1", apiKey: "unused", maxRetries: 0});
});

after(async () => {
  const {code} = await server.stop();
  assert.equal(code, 0);
});

describe("models, health, version", () => {
  test("GET /v1/models lists the served model", async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    assert.equal(models.length, 1);
    assert.equal(models[0].id, "tiny-qwen3");
    assert.equal(models[0].object, "model");
  });
  test("GET /health and /version", async () => {
    assert.equal((await fetch(server.url + "/health")).status, 200);
    const v = await getJson("/version");
    assert.equal(v.status, 200);
    assert.equal(typeof v.body.version, "string");
  });
});

describe("completions", () => {
  test("a whole answer has OpenAI's shape and usage", async () => {
    const r = await client.completions.create({model: "tiny-qwen3", prompt: "The capital of France is",
                                               max_tokens: 8, temperature: 0});
    assert.match(r.id, /^cmpl-/);
    assert.equal(r.object, "text_completion");
    assert.equal(r.model, "tiny-qwen3");
    assert.equal(typeof r.created, "number");
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].index, 0);
    assert.equal(typeof r.choices[0].text, "string");
    assert.equal(r.choices[0].finish_reason, "length");
    assert.equal(r.usage.completion_tokens, 8);
    assert.ok(r.usage.prompt_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 8);
    assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, "number");
  });

  test("a seeded stream joins to the whole answer; finish_reason only on each choice's last chunk", async () => {
    const params = {model: "tiny-qwen3", prompt: "Once upon a time", max_tokens: 12, temperature: 1.0,
                    seed: 1234, n: 2};
    const whole = await client.completions.create(params);
    const chunks = await collect(await client.completions.create({...params, stream: true}));
    const {text, finish} = joined(chunks);
    for (const choice of whole.choices) {
      assert.equal(text[choice.index], choice.text);
      assert.equal(finish[choice.index].reason, choice.finish_reason);
    }
    for (const [index, f] of Object.entries(finish))
      for (let i = f.chunk + 1; i < chunks.length; ++i)
        assert.ok(!chunks[i].choices.some((c) => c.index === Number(index)), "a chunk after finish_reason");
  });

  test("n with a seed gives n choices indexed 0..n-1", async () => {
    const r = await client.completions.create({model: "tiny-qwen3", prompt: "Hi", max_tokens: 4, n: 3,
                                               seed: 9, temperature: 1});
    assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
    assert.equal(r.usage.completion_tokens, 12);
  });

  test("a list of prompts gives a choice per prompt", async () => {
    const r = await client.completions.create({model: "tiny-qwen3", prompt: ["Hi", "Hello there"],
                                               max_tokens: 3, temperature: 0});
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  });

  test("a prompt of token ids is used as it is", async () => {
    const ids = [9707, 11, 1879, 0, 151643];
    const r = await client.completions.create({model: "tiny-qwen3", prompt: ids, max_tokens: 2, temperature: 0});
    assert.equal(r.usage.prompt_tokens, ids.length);
    const echoed = await client.completions.create({model: "tiny-qwen3", prompt: ids, max_tokens: 2,
                                                    temperature: 0, echo: true});
    const detok = await getJson("/detokenize", {method: "POST", body: JSON.stringify({tokens: ids})});
    assert.ok(echoed.choices[0].text.startsWith(detok.body.prompt));
  });

  test("stream_options.include_usage adds a last chunk with no choices and the usage", async () => {
    const chunks = await collect(await client.completions.create({
      model: "tiny-qwen3", prompt: "One two three", max_tokens: 5, temperature: 0, stream: true,
      stream_options: {include_usage: true}}));
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 5);
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 5);
  });

  test("a stop string ends the text before it, finish_reason stop", async () => {
    const base = {model: "tiny-qwen3", prompt: "Numbers: 1, 2, 3,", max_tokens: 24, temperature: 0};
    const free = (await client.completions.create(base)).choices[0].text;
    assert.ok(free.length > 4, "the free run is long enough to cut");
    const stop = free.slice(Math.floor(free.length / 2), Math.floor(free.length / 2) + 2);
    const cut = await client.completions.create({...base, stop: [stop]});
    assert.equal(cut.choices[0].text, free.slice(0, free.indexOf(stop)));
    assert.equal(cut.choices[0].finish_reason, "stop");
  });

  test("logprobs: the chosen token's and the top alternatives", async () => {
    const r = await client.completions.create({model: "tiny-qwen3", prompt: "Hello", max_tokens: 4,
                                               temperature: 0, logprobs: 2});
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, 4);
    assert.equal(lp.token_logprobs.length, 4);
    assert.equal(lp.text_offset.length, 4);
    for (const [i, top] of lp.top_logprobs.entries()) {
      assert.ok(Object.keys(top).length >= 1 && Object.keys(top).length <= 2);
      assert.ok(lp.token_logprobs[i] <= 0);
    }
    assert.equal(lp.tokens.join(""), r.choices[0].text);
  });

  test("vLLM's extra sampling fields are taken", async () => {
    const r = await client.completions.create({model: "tiny-qwen3", prompt: "Hello", max_tokens: 6,
                                               top_k: 5, min_p: 0.05, repetition_penalty: 1.1,
                                               min_tokens: 6, stop_token_ids: [151643], ignore_eos: true,
                                               skip_special_tokens: false, presence_penalty: 0.5,
                                               frequency_penalty: 0.5, top_p: 0.9, seed: 3, user: "u"});
    assert.equal(r.usage.completion_tokens, 6);
  });
});

describe("chat completions", () => {
  const messages = [{role: "system", content: "You are terse."}, {role: "user", content: "Say hi"}];

  test("a whole answer has OpenAI's shape", async () => {
    const r = await client.chat.completions.create({model: "tiny-qwen3", messages, max_tokens: 6,
                                                    temperature: 0});
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.object, "chat.completion");
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(typeof r.choices[0].message.content, "string");
    assert.equal(r.choices[0].finish_reason, "length");
    assert.equal(r.usage.completion_tokens, 6);
  });

  test("content as a list of text parts renders as the same prompt", async () => {
    const parts = [{role: "user", content: [{type: "text", text: "Say"}, {type: "text", text: "hi"}]}];
    const a = await client.chat.completions.create({model: "tiny-qwen3", messages: parts, max_tokens: 3,
                                                    temperature: 0});
    const b = await client.chat.completions.create({model: "tiny-qwen3", messages: [{role: "user", content: "Say\nhi"}],
                                                    max_tokens: 3, temperature: 0});
    assert.equal(a.usage.prompt_tokens, b.usage.prompt_tokens);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  });

  test("a seeded stream: the role first, then content joining to the whole answer", async () => {
    const params = {model: "tiny-qwen3", messages, max_completion_tokens: 10, temperature: 0.8, seed: 77};
    const whole = await client.chat.completions.create(params);
    const chunks = await collect(await client.chat.completions.create({...params, stream: true,
                                                                       stream_options: {include_usage: true}}));
    assert.equal(chunks[0].object, "chat.completion.chunk");
    assert.equal(chunks[0].choices[0].delta.role, "assistant");
    const {text, finish} = joined(chunks, true);
    assert.equal(text[0], whole.choices[0].message.content);
    assert.equal(finish[0].reason, whole.choices[0].finish_reason);
    assert.equal(chunks[chunks.length - 1].usage.completion_tokens, whole.usage.completion_tokens);
  });

  test("logprobs with top_logprobs", async () => {
    const r = await client.chat.completions.create({model: "tiny-qwen3", messages, max_tokens: 3,
                                                    temperature: 0, logprobs: true, top_logprobs: 2});
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, 3);
    for (const entry of content) {
      assert.equal(typeof entry.token, "string");
      assert.ok(Array.isArray(entry.bytes));
      assert.equal(entry.top_logprobs.length, 2);
    }
  });
});

describe("errors", () => {
  test("stream_options without stream is a 400", async () => {
    await assert.rejects(client.completions.create({model: "tiny-qwen3", prompt: "x", max_tokens: 1,
                                                    stream_options: {include_usage: true}}),
                         (e) => e.status === 400 && /stream_options/.test(e.message));
  });

  test("logprobs over 20 is a 400 and the server stays healthy", async () => {
    await assert.rejects(client.completions.create({model: "tiny-qwen3", prompt: "x", logprobs: 21}),
                         (e) => e.status === 400 && e.error?.param === "logprobs");
    await assert.rejects(client.chat.completions.create({model: "tiny-qwen3", messages: [{role: "user", content: "x"}],
                                                         logprobs: true, top_logprobs: 21}),
                         (e) => e.status === 400);
    assert.equal((await fetch(server.url + "/health")).status, 200);
    const r = await client.completions.create({model: "tiny-qwen3", prompt: "x", max_tokens: 1});
    assert.equal(r.choices.length, 1);
  });

  test("out-of-range values and wrong types are 400s naming the field", async () => {
    for (const [field, value] of [["temperature", -1], ["n", 0], ["max_tokens", "many"], ["top_p", 2],
                                  ["seed", 1.5], ["n", 1e12]]) {
      await assert.rejects(client.completions.create({model: "tiny-qwen3", prompt: "x", [field]: value}),
                           (e) => e.status === 400 && e.message.includes(field), `${field}=${value}`);
    }
  });

  test("a prompt longer than max_model_len is a 400", async () => {
    const ids = Array.from({length: 5000}, (_, i) => 100 + (i % 1000));
    await assert.rejects(client.completions.create({model: "tiny-qwen3", prompt: ids, max_tokens: 1}),
                         (e) => e.status === 400 && /max_model_len|longer/.test(e.message));
  });

  test("an unknown model or path is a 404", async () => {
    await assert.rejects(client.completions.create({model: "gpt-9", prompt: "x"}),
                         (e) => e.status === 404 && e.error?.param === "model");
    const r = await getJson("/v1/nothing");
    assert.equal(r.status, 404);
    assert.equal(typeof r.body.error.message, "string");
  });
});

describe("tokenize and detokenize", () => {
  test("round trip, and chat messages through the model's template", async () => {
    const t = await getJson("/tokenize", {method: "POST", body: JSON.stringify({prompt: "Hello world"})});
    assert.equal(t.status, 200);
    assert.equal(t.body.count, t.body.tokens.length);
    assert.equal(t.body.max_model_len, 4096);
    const d = await getJson("/detokenize", {method: "POST", body: JSON.stringify({tokens: t.body.tokens})});
    assert.equal(d.body.prompt, "Hello world");
    const m = await getJson("/tokenize", {method: "POST", body: JSON.stringify({
      messages: [{role: "user", content: "Hello world"}], add_generation_prompt: true})});
    assert.ok(m.body.count > t.body.count);
    const r = await client.chat.completions.create({model: "tiny-qwen3", messages: [{role: "user", content: "Hello world"}],
                                                    max_tokens: 1});
    assert.equal(r.usage.prompt_tokens, m.body.count);
  });
});

describe("servers with other settings", () => {
  test("--api-key (or MINIVLLM_API_KEY): 401 without it, answers with it, /health open", async () => {
    const s = await startServer(["--api-key", "sekret"]);
    try {
      const bad = new OpenAI({baseURL: s.url + "/v1", apiKey: "wrong", maxRetries: 0});
      await assert.rejects(bad.models.list(), (e) => e.status === 401);
      assert.equal((await fetch(s.url + "/v1/models")).status, 401);
      assert.equal((await fetch(s.url + "/health")).status, 200);
      const good = new OpenAI({baseURL: s.url + "/v1", apiKey: "sekret", maxRetries: 0});
      const r = await good.completions.create({model: "tiny-qwen3", prompt: "x", max_tokens: 1});
      assert.equal(r.choices.length, 1);
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
    const e = await startServer([], {MINIVLLM_API_KEY: "from-env"});
    try {
      assert.equal((await fetch(e.url + "/v1/models")).status, 401);
      const ok = await fetch(e.url + "/v1/models", {headers: {Authorization: "Bearer from-env"}});
      assert.equal(ok.status, 200);
    } finally {
      assert.equal((await e.stop()).code, 0);
    }
  });

  test("413 for a body over server.max_body_bytes, 503 when the waiting queue is full", async () => {
    const s = await startServer(["--set", "server.max_body_bytes=2000", "--set", "scheduler.max_num_seqs=1",
                                 "--set", "server.max_waiting=1"]);
    try {
      const c = new OpenAI({baseURL: s.url + "/v1", apiKey: "x", maxRetries: 0});
      await assert.rejects(c.completions.create({model: "tiny-qwen3", prompt: "x".repeat(5000)}),
                           (e) => e.status === 413);
      // Two long streams fill the running slot and the waiting one; a third is refused.
      const long = {model: "tiny-qwen3", prompt: "Go", max_tokens: 4000, ignore_eos: true, stream: true};
      const first = await c.completions.create(long);
      const controller = new AbortController();
      const second = c.completions.create(long, {signal: controller.signal}).catch(() => null);
      for (let i = 0; i < 200; ++i) {
        const metrics = await (await fetch(s.url + "/metrics")).text();
        if (/num_requests_waiting\{[^}]*\} 1/.test(metrics)) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await assert.rejects(c.completions.create({model: "tiny-qwen3", prompt: "x", max_tokens: 1}),
                           (e) => e.status === 503 && /busy/.test(e.message));
      first.controller.abort();
      controller.abort();
      await second;
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
  });

  test("one log line per finished request at info", async () => {
    const s = await startServer(["--set", "runtime.log_level=\"info\""]);
    const c = new OpenAI({baseURL: s.url + "/v1", apiKey: "x", maxRetries: 0});
    const r = await c.completions.create({model: "tiny-qwen3", prompt: "Hello", max_tokens: 3});
    assert.equal((await s.stop()).code, 0);
    const lines = s.stderr().split("\n").filter((l) => l.includes(r.id + ":"));
    assert.equal(lines.length, 1, s.stderr());
    assert.match(lines[0], /INFO .*: finished \(length\), 1 prompt tokens \(0 cached\), 3 completion tokens, TTFT [0-9.]+ ms, e2e [0-9.]+ ms/);
  });

  test("SIGTERM ends a running stream with finish_reason abort and exits 0", async () => {
    const s = await startServer();
    const c = new OpenAI({baseURL: s.url + "/v1", apiKey: "x", maxRetries: 0});
    const st = await c.completions.create({model: "tiny-qwen3", prompt: "Go", max_tokens: 3000,
                                           ignore_eos: true, stream: true});
    const chunks = [];
    let stopping;
    for await (const chunk of st) {
      chunks.push(chunk);
      if (chunks.length === 3) stopping = s.stop();
    }
    const finish = chunks.flatMap((ch) => ch.choices).filter((ch) => ch.finish_reason !== null);
    assert.deepEqual(finish.map((ch) => ch.finish_reason), ["abort"]);
    assert.equal((await stopping).code, 0);
  });
});
