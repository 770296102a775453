// A test-only entry: the shipped worker.mjs with a Tenant subclass that can
// trap the module at the n-th SQL statement starting with a prefix, so the
// conformance suite shows a trap mid-transaction leaves nothing behind in
// workerd too; and a route that reaches a tenant's object the way a
// service binding of the Tenant class would, past the Worker entry:
// /__direct/{object's tenant}/{path the object gets}, with the caller's
// headers but the Authorization one unless x-direct-auth is set. The
// harness copies it next to worker.mjs; it never ships.
import worker, { Tenant as Shipped } from "./worker.mjs";

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
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

  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/__faults")) {
      const rule = await request.json();
      this.faultRule = rule.prefix ? { ...rule, seen: 0 } : null;
      return new Response(null, { status: 204 });
    }
    return super.fetch(request);
  }
}
