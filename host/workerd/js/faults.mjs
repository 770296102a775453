// A test-only entry: the shipped worker.mjs with a Tenant subclass that can
// trap the module at the n-th SQL statement starting with a prefix, so the
// conformance suite shows a trap mid-transaction leaves nothing behind in
// workerd too. The harness copies it next to worker.mjs; it never ships.
import worker, { Tenant as Shipped } from "./worker.mjs";

export default worker;

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
