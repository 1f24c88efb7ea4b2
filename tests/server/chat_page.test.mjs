// The chat page served at GET / (apps/server/chat_page.html), driven in headless Chromium through
// puppeteer-core against the real `minivllm serve` on the tiny Qwen3 model (CPU backend): the page
// loads, a message streams into the log progressively, the status line ends with the finish
// reason, and a second turn (which sends the history back) works too.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {test} from "node:test";
import puppeteer from "puppeteer-core";

import {startServer} from "./serve.mjs";

const CHROMIUM = "/usr/bin/chromium";
const WAIT_MS = 60000;

// Installs (or resets) a MutationObserver on the page that records, into window.__seen, the text
// length of the newest assistant message every time the log or the status line changes while the
// status says "generating".
async function watchStreaming(page) {
  await page.evaluate(() => {
    window.__seen = [];
    if (window.__observer) window.__observer.disconnect();
    const log = document.getElementById("log");
    const status = document.getElementById("status");
    const record = () => {
      if (status.textContent !== "generating") return;
      const all = log.querySelectorAll("div.msg.assistant");
      const last = all[all.length - 1];
      if (last) window.__seen.push(last.textContent.length);
    };
    window.__observer = new MutationObserver(record);
    window.__observer.observe(log, {childList: true, subtree: true, characterData: true});
    window.__observer.observe(status, {childList: true, subtree: true, characterData: true});
  });
}

// Types `text` into the page, submits it, and waits until the status line says "done".
async function sendAndWait(page, text) {
  await watchStreaming(page);
  await page.type("#input", text);
  await page.click("#send");
  await page.waitForFunction(
      () => /^(done|error)/.test(document.getElementById("status").textContent),
      {timeout: WAIT_MS, polling: "mutation"});
  return page.evaluate(() => ({
    status: document.getElementById("status").textContent,
    user: [...document.querySelectorAll("#log div.msg.user")].map((d) => d.textContent),
    assistant: [...document.querySelectorAll("#log div.msg.assistant")].map((d) => d.textContent),
    errors: [...document.querySelectorAll("#log div.msg.error")].map((d) => d.textContent),
    seen: window.__seen,
    input: document.getElementById("input").value,
    sendDisabled: document.getElementById("send").disabled,
  }));
}

function assertProgressive(t, seen) {
  const nonZero = [...new Set(seen.filter((n) => n > 0))];
  t.diagnostic(`assistant text lengths seen while generating: ${JSON.stringify(seen)}`);
  if (nonZero.length < 2) t.diagnostic("the stream was too fast to see the text grow more than once");
  // Two distinct lengths show text growing; one is accepted when the tiny model streams too fast
  // for the observer to see more than one intermediate state.
  assert.ok(nonZero.length >= 1,
            `no non-empty assistant text was seen while status was "generating": ${JSON.stringify(seen)}`);
}

test("chat page streams a conversation in headless Chromium", {timeout: 120000}, async (t) => {
  if (!fs.existsSync(CHROMIUM)) {
    console.log(`chat_page.test.mjs: SKIPPED: ${CHROMIUM} does not exist, so the chat page cannot be ` +
                "driven in a headless browser");
    t.skip(`${CHROMIUM} not found`);
    return;
  }

  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "minivllm-chromium-"));
  let server;
  let browser;
  try {
    server = await startServer();
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      userDataDir,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const page = await browser.newPage();
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(e));
    const bodies = [];  // what the page POSTed to /v1/chat/completions
    page.on("request", (req) => {
      if (req.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(req.postData()));
    });

    await t.test("the page loads", async () => {
      const res = await page.goto(server.url + "/", {waitUntil: "load", timeout: WAIT_MS});
      assert.equal(res.status(), 200);
      assert.match(await page.title(), /minivllm/);
      assert.equal(await page.$eval("#status", (e) => e.textContent), "ready");
      assert.equal(await page.$$eval("#log .msg", (d) => d.length), 0);
    });

    await t.test("a first message streams in and stops at max_tokens", async (t) => {
      await page.$eval("#max-tokens", (e) => { e.value = "8"; });
      const r = await sendAndWait(page, "Hello there");
      assert.deepEqual(r.errors, [], "the page showed an error message");
      assert.equal(r.status, "done (finish_reason: length)");
      assert.deepEqual(r.user, ["Hello there"]);
      assert.equal(r.assistant.length, 1);
      assert.ok(r.assistant[0].length > 0, "the assistant message is empty");
      assert.equal(r.input, "", "the input was not cleared");
      assert.equal(r.sendDisabled, false, "the send button stayed disabled");
      assertProgressive(t, r.seen);
      assert.equal(bodies.length, 1);
      assert.equal(bodies[0].stream, true);
      assert.equal(bodies[0].max_tokens, 8);
      assert.deepEqual(bodies[0].messages, [{role: "user", content: "Hello there"}]);
      assert.deepEqual(pageErrors, []);
      assert.equal((await fetch(server.url + "/health")).status, 200);
    });

    await t.test("a second turn keeps the history", async (t) => {
      const r = await sendAndWait(page, "And again");
      assert.deepEqual(r.errors, [], "the page showed an error message");
      assert.equal(r.status, "done (finish_reason: length)");
      assert.deepEqual(r.user, ["Hello there", "And again"]);
      assert.equal(r.assistant.length, 2);
      assert.ok(r.assistant[1].length > 0, "the second assistant message is empty");
      assert.deepEqual(await page.$$eval("#log .msg", (d) => d.map((e) => e.className)),
                       ["msg user", "msg assistant", "msg user", "msg assistant"]);
      assertProgressive(t, r.seen);
      assert.equal(bodies.length, 2);
      assert.equal(bodies[1].max_tokens, 8);
      assert.deepEqual(bodies[1].messages, [{role: "user", content: "Hello there"},
                                            {role: "assistant", content: r.assistant[0]},
                                            {role: "user", content: "And again"}]);
      assert.deepEqual(pageErrors, []);
      assert.equal((await fetch(server.url + "/health")).status, 200);
    });
  } finally {
    if (browser) await browser.close();
    fs.rmSync(userDataDir, {recursive: true, force: true});
    if (server) {
      const {code, signal} = await server.stop();
      assert.equal(code, 0, `server exited with ${code} (${signal}): ${server.stderr()}`);
    }
  }
});
