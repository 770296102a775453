// Starts the Worker bundle in a directory under Miniflare 4 (real workerd),
// listening on a loopback port, prints {"url": …} on one line, and disposes
// of it when stdin closes. The Go conformance suite drives it.
//
//   STILE_TOKEN=… node host/workerd/js/serve.mjs <bundle dir>
import { Miniflare } from "miniflare";
import { resolve, join } from "node:path";

const dir = resolve(process.argv[2] ?? "build");
// STILE_ENTRY names another entry module in dir (the tests' faults.mjs).
const entry = process.env.STILE_ENTRY ?? "worker.mjs";
const mf = new Miniflare({
  modulesRoot: dir,
  modules: [
    { type: "ESModule", path: join(dir, entry) },
    ...(entry === "worker.mjs" ? [] : [{ type: "ESModule", path: join(dir, "worker.mjs") }]),
    { type: "ESModule", path: join(dir, "abi.mjs") },
    { type: "ESModule", path: join(dir, "config.mjs") },
    { type: "CompiledWasm", path: join(dir, "tenant.wasm") },
  ],
  compatibilityDate: "2026-08-01",
  durableObjects: { TENANT: { className: "Tenant", useSQLite: true } },
  bindings: { STILE_TOKEN: process.env.STILE_TOKEN ?? "" },
  host: "127.0.0.1",
  port: 0,
  cf: false,
});

const url = await mf.ready;
process.stdout.write(JSON.stringify({ url: url.toString() }) + "\n");

let closing = false;
async function close() {
  if (closing) return;
  closing = true;
  await mf.dispose();
  process.exit(0);
}
process.stdin.on("end", close);
process.stdin.on("close", close);
process.on("SIGTERM", close);
process.stdin.resume();
