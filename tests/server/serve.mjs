// Starts the real `minivllm serve --port 0` on the tiny Qwen3 model (CPU backend) and waits until
// it prints "listening on http://HOST:PORT", i.e. until /health answers 200.
import {spawn} from "node:child_process";
import path from "node:path";

const source = process.env.MINIVLLM_SOURCE_DIR;
const bin = process.env.MINIVLLM_BIN;
const data = process.env.MINIVLLM_DATA;
const plugins = process.env.MINIVLLM_PLUGIN_DIR;

export function serverArgs(extra = []) {
  return ["serve", "--config", path.join(source, "configs", "tiny-qwen3.toml"),
          "--set", `model.path=${JSON.stringify(path.join(data, "models", "tiny-qwen3"))}`,
          "--set", `runtime.plugin_dirs=[${JSON.stringify(plugins)}]`,
          "--set", "runtime.log_level=\"warn\"", "--port", "0", ...extra];
}

export async function startServer(extra = [], env = {}) {
  const proc = spawn(bin, serverArgs(extra), {env: {...process.env, ...env},
                                              stdio: ["ignore", "pipe", "pipe"]});
  let stderr = "";
  proc.stderr.on("data", (d) => { stderr += d; });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("no 'listening on' within 60 s: " + stderr)), 60000);
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${stderr}`)); });
  });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({code, signal})));
  return {
    url, proc, exited,
    stderr: () => stderr,
    // SIGTERM; resolves with the exit code.
    async stop() {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 30000);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}
