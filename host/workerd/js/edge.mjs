// The Worker entry of a deployment with edge executors (`stile build
// --handlers`): the Stile Worker of worker.mjs, and the Go executor
// (executor.wasm, the handler package compiled with GOOS=js through
// syumai/workers, whose shim.mjs and wasm_exec.js `stile build` writes
// next to this file). The Tenant class pushes to the executor through the
// Worker's own service binding (EXECUTOR), so each push is an invocation
// of its own, with its own limits.
import worker, { Directory, Tenant } from "./worker.mjs";
import * as shim from "./shim.mjs";
import executor from "./executor.wasm";
import { EXECUTOR_PATH } from "./config.mjs";

shim.init(executor);

export { Directory, Tenant };

export default {
  async fetch(request, env, ctx) {
    // The executor checks the token itself, as the API does.
    if (new URL(request.url).pathname === EXECUTOR_PATH) return shim.fetch(request, env, ctx);
    return worker.fetch(request, env, ctx);
  },
};
