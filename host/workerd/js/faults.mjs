// A test-only entry: the shipped entry (worker.mjs, or edge.mjs for a
// bundle with edge executors: the harness rewrites the import) with
//
//   - a Tenant subclass that can trap the module at the n-th SQL statement
//     starting with a prefix, so the conformance suite shows a trap
//     mid-transaction leaves nothing behind in workerd too;
//   - a route that reaches a tenant's object the way a service binding of
//     the Tenant class would, past the Worker entry: /__direct/{object's
//     tenant}/{path the object gets}, with the caller's headers but the
//     Authorization one unless x-direct-auth is set;
//   - faults of the edge executor's invocations, set by POST
//     /__executor_faults {refuse: n, kill: n}: the next n pushes are
//     refused with a 503, or reach an executor whose calls to the tenant
//     all fail once a claim handed it work (an invocation killed
//     mid-handler, as the tenant sees it). GET /__executor_faults counts
//     invocations, the most calls to the tenant one made, the calls of
//     all of them by kind (calls: claim, report, reports, heartbeat, done,
//     other) and the most one had in flight at once (maxInFlight), and
//     lists how long the last pushes took to be accepted (pushMs: what a
//     tenant's object waits per push); stile bench prints them;
//   - a count of the requests and alarms each tenant's object received:
//     GET /__object_calls;
//   - tenants never pushed: those whose name starts with "unpushed-"
//     (their object does not tell the module it can deliver pushes), so
//     that a worker of the test's own drains them beside the executor;
//   - GET /v1/t/{tenant}/__instance: the instance of the tenant's object
//     answering (a new one after the runtime evicted the object), and the
//     WebSockets the runtime holds for the object (its watches);
//   - a delay of the erasure notes the Directory object receives, set by
//     POST /__directory_delay {ms}: a note that arrives late shows whether
//     the erasure's answer waited for it.
//
// The harness copies it next to the entry; it never ships.
import worker, { Tenant as Shipped, Directory as ShippedDirectory } from "./worker.mjs";
import { EXECUTOR_PATH, HEADER_EXECUTOR } from "./config.mjs";

const directoryDelay = { ms: 0 };

// UNPUSHED starts the names of tenants whose object does not say it can
// deliver pushes: the bench drains them with the worker library, in the
// same deployment as the edge executor's tenants.
const UNPUSHED = "unpushed-";

const executorFaults = { refuse: 0, kill: 0, invocations: 0, maxCalls: 0, pushMs: [], calls: {}, maxInFlight: 0 };
const objectCalls = {}; // tenant -> requests and alarms its object received

// dyingNamespace wraps the TENANT namespace of one invocation: it counts
// the invocation's calls to objects (by kind, and the most in flight at
// once) and, when kill is set, fails every call after a claim that
// returned work.
function dyingNamespace(ns, kill) {
  let calls = 0, dead = false, inFlight = 0;
  const stub = (s) => ({
    async fetch(...args) {
      if (dead) throw new Error("injected fault: the invocation was killed");
      calls++;
      executorFaults.maxCalls = Math.max(executorFaults.maxCalls, calls);
      const p = new URL(args[0].url ?? args[0]).pathname;
      const kind = p.endsWith("/claims") ? "claim" : p.endsWith("/reports") ? "reports" : p.endsWith("/report") ? "report" : p.endsWith("/heartbeat") ? "heartbeat" : p.endsWith("/done") ? "done" : "other";
      executorFaults.calls[kind] = (executorFaults.calls[kind] ?? 0) + 1;
      inFlight++;
      executorFaults.maxInFlight = Math.max(executorFaults.maxInFlight, inFlight);
      let res;
      try {
        res = await s.fetch(...args);
      } finally {
        inFlight--;
      }
      if (kill && kind === "claim") {
        const body = await res.clone().json().catch(() => ({}));
        if (body.jobs?.length > 0) dead = true;
      }
      return res;
    },
  });
  return {
    idFromName: (name) => ns.idFromName(name),
    get: (id) => stub(ns.get(id)),
  };
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__object_calls") return Response.json(objectCalls);
    if (url.pathname === "/__directory_delay" && request.method === "POST") {
      Object.assign(directoryDelay, await request.json());
      return new Response(null, { status: 204 });
    }
    if (url.pathname === "/__executor_faults") {
      if (request.method === "POST") Object.assign(executorFaults, await request.json());
      return Response.json(executorFaults);
    }
    if (url.pathname === EXECUTOR_PATH) {
      executorFaults.invocations++;
      if (executorFaults.refuse > 0) {
        executorFaults.refuse--;
        return new Response("injected fault: the executor refused the push", { status: 503 });
      }
      const kill = executorFaults.kill > 0;
      if (kill) executorFaults.kill--;
      const started = Date.now();
      const res = await worker.fetch(request, { ...env, TENANT: dyingNamespace(env.TENANT, kill) }, ctx);
      executorFaults.pushMs.push(Date.now() - started);
      if (executorFaults.pushMs.length > 1000) executorFaults.pushMs.shift();
      return res;
    }
    const m = url.pathname.match(/^\/__direct\/([^/]+)(\/.*)$/);
    if (!m) return worker.fetch(request, env, ctx);
    const headers = new Headers(request.headers);
    if (!headers.get("x-direct-auth")) headers.delete("authorization");
    const body = ["GET", "HEAD"].includes(request.method) ? undefined : await request.arrayBuffer();
    const stub = env.TENANT.get(env.TENANT.idFromName(m[1]));
    return stub.fetch(new Request(new URL(m[2] + url.search, url), { method: request.method, headers, body }));
  },
};

export class Tenant extends Shipped {
  ownHeaders() {
    const own = super.ownHeaders();
    return this.tenant.startsWith(UNPUSHED) ? own.filter(([name]) => name !== HEADER_EXECUTOR) : own;
  }

  instantiateOptions() {
    return {
      ...super.instantiateOptions(),
      fault: (sql) => {
        const rule = this.faultRule;
        if (rule && sql.trimStart().startsWith(rule.prefix) && ++rule.seen === rule.nth) {
          throw new WebAssembly.RuntimeError(`injected fault at: ${sql.split("\n")[0]}`);
        }
      },
    };
  }

  count(request) {
    const tenant = this.tenant || (request && new URL(request.url).pathname.split("/")[3]) || "?";
    objectCalls[tenant] = (objectCalls[tenant] ?? 0) + 1;
  }

  async alarm() {
    this.count();
    return super.alarm();
  }

  async fetch(request) {
    this.count(request);
    const url = new URL(request.url);
    if (url.pathname.endsWith("/__instance")) {
      return Response.json({ instance: this.use.gen, sockets: this.ctx.getWebSockets().length });
    }
    if (url.pathname.endsWith("/__faults")) {
      const rule = await request.json();
      this.faultRule = rule.prefix ? { ...rule, seen: 0 } : null;
      return new Response(null, { status: 204 });
    }
    return super.fetch(request);
  }
}

export class Directory extends ShippedDirectory {
  async fetch(request) {
    if (directoryDelay.ms > 0 && new URL(request.url).pathname === "/notify" && (await request.clone().json()).erased) {
      await new Promise((r) => setTimeout(r, directoryDelay.ms));
    }
    return super.fetch(request);
  }
}
