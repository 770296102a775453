// Starts the Worker bundle in a directory under Miniflare 4 (real workerd),
// listening on a loopback port, prints {"url": …} on one line, and disposes
// of it when stdin closes. The Go conformance suite drives it.
//
//   STILE_TOKEN=… node host/workerd/js/serve.mjs <bundle dir>
//
// A bundle with edge.mjs (`stile build --handlers`) runs with its executor
// and the EXECUTOR service binding to itself; a caller.mjs in the
// directory runs as a second Worker, "caller", with a STILE service
// binding, reached by requests whose Host is caller.test. STILE_VARS (a
// JSON object) adds vars to the Stile Worker. STILE_PERSIST keeps the
// objects' storage in that directory, so that another bundle started over
// it is the same deployment upgraded.
import { Miniflare } from "miniflare";
import { existsSync } from "node:fs";
import { resolve, join } from "node:path";

const dir = resolve(process.argv[2] ?? "build");
const edge = existsSync(join(dir, "edge.mjs"));
// STILE_ENTRY names another entry module in dir (the tests' faults.mjs).
const entry = process.env.STILE_ENTRY ?? (edge ? "edge.mjs" : "worker.mjs");
const esm = (name) => ({ type: "ESModule", path: join(dir, name) });
const modules = [entry, "worker.mjs", "abi.mjs", "config.mjs", "console.mjs", "token.mjs"];
if (edge) modules.push("edge.mjs", "shim.mjs", "wasm_exec.js");
const stile = {
  name: "stile",
  modulesRoot: dir,
  modules: [
    ...[...new Set(modules)].map(esm),
    { type: "CompiledWasm", path: join(dir, "tenant.wasm") },
    ...(edge ? [{ type: "CompiledWasm", path: join(dir, "executor.wasm") }] : []),
  ],
  compatibilityDate: "2026-08-01",
  durableObjects: { TENANT: { className: "Tenant", useSQLite: true }, DIRECTORY: { className: "Directory", useSQLite: true } },
  bindings: { STILE_TOKEN: process.env.STILE_TOKEN ?? "", ...JSON.parse(process.env.STILE_VARS ?? "{}") },
  ...(edge ? { serviceBindings: { EXECUTOR: "stile" } } : {}),
};
const workers = [stile];
if (existsSync(join(dir, "caller.mjs"))) {
  workers.push({
    name: "caller",
    modulesRoot: dir,
    modules: [esm("caller.mjs"), esm("client.mjs")],
    compatibilityDate: "2026-08-01",
    bindings: { STILE_TOKEN: process.env.STILE_TOKEN ?? "" },
    serviceBindings: { STILE: "stile" },
    routes: ["caller.test/*"],
  });
}
const persist = process.env.STILE_PERSIST ? { durableObjectsPersist: process.env.STILE_PERSIST } : {};
const mf = new Miniflare({ workers, host: "127.0.0.1", port: 0, cf: false, ...persist });

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
