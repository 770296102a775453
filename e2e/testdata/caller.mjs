// A user's Worker that calls Stile through a service binding (env.STILE)
// with the shipped client.mjs: the edge tests post {tenant, op, arg} to it
// (Host: caller.test) and get back what Stile answered.
import { Stile, StileError } from "./client.mjs";

export default {
  async fetch(request, env) {
    const { tenant, op, arg, token } = await request.json();
    const t = new Stile(env.STILE, token || env.STILE_TOKEN).tenant(tenant);
    try {
      switch (op) {
        case "enqueue":
          return Response.json(await t.enqueue(arg));
        case "command":
          return Response.json(await t.command(arg));
        case "job":
          return Response.json(await t.job(arg));
        default:
          return Response.json({ error: `unknown op ${op}` }, { status: 400 });
      }
    } catch (e) {
      if (e instanceof StileError) return Response.json({ status: e.status, code: e.code, message: e.message }, { status: 502 });
      throw e;
    }
  },
};
