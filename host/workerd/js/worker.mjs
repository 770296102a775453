// The Worker of a Stile deployment: a tiny router in front of one Durable
// Object per tenant, and the Durable Object class that runs the tenant
// module. Both are thin transports: the module (tenant.wasm) owns the API.
// `stile build` writes this file next to config.mjs (constants generated
// from the Go API package) and tenant.wasm.

import wasm from "./tenant.wasm";
import {
  decodeResponse, encodeRequest, instantiate, validTraceparent,
  FLAG_WAKE, HEADER_PRINCIPAL, HEADER_TRACEPARENT, KIND_ALARM, KIND_API, RESERVED_PREFIX,
} from "./abi.mjs";
import {
  API_PREFIX, BODY_TOO_LARGE, EXECUTOR_PATH, HEADER_EXECUTOR, HEADER_PUSH, HEADER_TENANT, INTERNAL_PREFIX, INVALID_TENANT,
  MAX_BODY_BYTES, NO_ROUTE_HINT, PRINCIPAL_ADMIN, PUSH_FAILED, TENANT_PATTERN, UNAUTHORIZED, WRONG_OBJECT,
} from "./config.mjs";

const tenantRe = new RegExp(TENANT_PATTERN);

function json(status, body) {
  return new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

// The 404 and 500 bodies, worded as api.NoRoute and api.Internal word them.
const noRoute = (method, path) => json(404, { code: "not_found", message: `no route ${method} ${path}: ${NO_ROUTE_HINT}` });
const internal = (cause) => json(500, { code: "internal", message: INTERNAL_PREFIX + cause });

function decodedPath(url) {
  try {
    return decodeURIComponent(url.pathname);
  } catch {
    return url.pathname;
  }
}

// Constant-time comparison of the bearer token.
function tokenMatches(header, token) {
  if (!token || !header.startsWith("Bearer ")) return false;
  const a = new TextEncoder().encode(header.slice(7)), b = new TextEncoder().encode(token);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return new Response("ok\n", { headers: { "content-type": "text/plain" } });
    if (!env.STILE_TOKEN) {
      return internal("the Worker has no STILE_TOKEN secret: run `npx wrangler secret put STILE_TOKEN`");
    }
    if (!tokenMatches(request.headers.get("authorization") ?? "", env.STILE_TOKEN)) return json(401, UNAUTHORIZED);
    const path = decodedPath(url);
    if (!path.startsWith(API_PREFIX)) {
      return noRoute(request.method, path);
    }
    const rest = path.slice(API_PREFIX.length);
    const slash = rest.indexOf("/");
    const tenant = slash < 0 ? rest : rest.slice(0, slash);
    if (!tenantRe.test(tenant)) return json(400, INVALID_TENANT);
    // The object checks the token and its own identity again: whoever
    // binds the Tenant class directly gets no further than this entry.
    return env.TENANT.get(env.TENANT.idFromName(tenant)).fetch(request);
  },
};

// tenantOf is the tenant a decoded path names ("" when it names none).
function tenantOf(path) {
  if (!path.startsWith(API_PREFIX)) return "";
  const rest = path.slice(API_PREFIX.length);
  const slash = rest.indexOf("/");
  return slash < 0 ? rest : rest.slice(0, slash);
}

// requestHeaders are the headers of a request frame from a client
// (do/header.go): the caller's traceparent when well-formed, the principal
// the object itself authenticated, and the object's own headers. Nothing
// else of the client's crosses: a stile- header a caller sends is never
// read.
function requestHeaders(request, principal, own) {
  const out = [];
  const tp = request.headers.get(HEADER_TRACEPARENT);
  if (validTraceparent(tp)) out.push([HEADER_TRACEPARENT, tp]);
  out.push([HEADER_PRINCIPAL, principal]);
  return out.concat(own);
}

// Tenant is the Durable Object of one tenant: it runs the module over its
// SQLite storage, keeps the alarm where the module says, holds empty
// long-poll claims until work arrives (the module never waits), and
// delivers the pushes the module asks for to the executor behind the
// EXECUTOR service binding, if the Worker has one.
export class Tenant {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    // The object's tenant: its id's name (an id made by idFromName has
    // one), else the one its first request's path named.
    this.tenant = ctx.id.name ?? "";
    this.module = null;
    this.alarmAt = undefined; // what was last set; undefined: unknown
    this.wakeUp = null;
    this.wakeAll = null;
    this.newWake();
  }

  newWake() {
    this.wakeUp = new Promise((resolve) => (this.wakeAll = resolve));
  }

  // call runs one frame through the module. A trap discards the instance
  // (its transaction was rolled back by transactionSync) and rethrows.
  call(frame) {
    if (!this.module) this.module = instantiate(wasm, this.ctx.storage, this.instantiateOptions());
    try {
      const resp = decodeResponse(this.module.handle(frame));
      this.after(resp);
      return resp;
    } catch (e) {
      this.module = null;
      throw e;
    }
  }

  // instantiateOptions are the options of abi.mjs's instantiate; a
  // subclass may add a log function.
  instantiateOptions() {
    return {};
  }

  // ownHeaders are what the object tells the module about itself: which
  // tenant it is, and whether it can deliver pushes.
  ownHeaders() {
    const out = [];
    if (this.tenant) out.push([HEADER_TENANT, this.tenant]);
    if (this.env.EXECUTOR) out.push([HEADER_EXECUTOR, "binding"]);
    return out;
  }

  after(resp) {
    // A negative alarmAt (do.AlarmUnchanged) keeps the alarm as it is.
    if (resp.alarmAt >= 0 && resp.alarmAt !== this.alarmAt) {
      if (resp.alarmAt > 0) this.ctx.storage.setAlarm(resp.alarmAt);
      else this.ctx.storage.deleteAlarm();
      this.alarmAt = resp.alarmAt;
    }
    if (resp.flags & FLAG_WAKE) {
      this.wakeAll();
      this.newWake();
    }
    const push = this.env.EXECUTOR && resp.headers.find(([name]) => name === HEADER_PUSH);
    if (push) {
      // Outside the module's transaction, and never awaited by the
      // request: the executor answers at once and works on its own.
      const plan = JSON.parse(push[1]);
      for (const id of plan.ids) this.ctx.waitUntil(this.deliver(plan, id));
    }
  }

  // deliver asks the executor to run a push; one it could not deliver is
  // ended as failed, and the module retries it from the alarm.
  async deliver(plan, id) {
    let why;
    try {
      const res = await this.env.EXECUTOR.fetch(new Request("https://executor" + EXECUTOR_PATH, {
        method: "POST",
        headers: { authorization: `Bearer ${this.env.STILE_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ tenant: plan.tenant, id, jobs: plan.jobs, kinds: plan.kinds, reactions: plan.reactions }),
      }));
      if (res.status === 202) return;
      why = `the executor answered ${res.status}: ${(await res.text()).slice(0, 200)}`;
    } catch (e) {
      why = `the executor could not be reached: ${String(e?.message ?? e).split("\n")[0]}`;
    }
    const body = new TextEncoder().encode(JSON.stringify({ end: PUSH_FAILED, error: why }));
    const path = `${API_PREFIX}${plan.tenant}/pushes/${id}/done`;
    try {
      this.call(encodeRequest(KIND_API, "POST", path, "", body, [[HEADER_PRINCIPAL, PRINCIPAL_ADMIN], ...this.ownHeaders()]));
    } catch (e) {
      console.warn(`could not end the failed push ${id}; it expires: ${e?.message ?? e}`);
    }
  }

  async fetch(request) {
    // The object trusts no caller: it checks the token itself (a service
    // that binds the Tenant class directly is refused like any other
    // caller), and that the path names the tenant it is, by its id.
    if (!this.env.STILE_TOKEN) {
      return internal("the Worker has no STILE_TOKEN secret: run `npx wrangler secret put STILE_TOKEN`");
    }
    if (!tokenMatches(request.headers.get("authorization") ?? "", this.env.STILE_TOKEN)) return json(401, UNAUTHORIZED);
    const url = new URL(request.url);
    const path = decodedPath(url);
    const tenant = tenantOf(path);
    if (tenant && (!tenantRe.test(tenant) || !this.env.TENANT.idFromName(tenant).equals(this.ctx.id))) {
      return json(400, WRONG_OBJECT);
    }
    if (tenant && !this.tenant) this.tenant = tenant;
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.length > MAX_BODY_BYTES) return json(413, BODY_TOO_LARGE);
    const frame = encodeRequest(KIND_API, request.method, path, url.search.slice(1), body, requestHeaders(request, PRINCIPAL_ADMIN, this.ownHeaders()));
    let deadline = 0;
    for (;;) {
      const woken = this.wakeUp; // before the call, so no wake-up is missed
      let resp;
      try {
        resp = this.call(frame);
      } catch (e) {
        return internal(`the tenant module trapped: ${String(e?.message ?? e).split("\n")[0]}`);
      }
      if (resp.holdMs > 0) {
        const now = Date.now();
        if (!deadline) deadline = now + resp.holdMs;
        if (now < deadline) {
          let until = deadline;
          if (this.alarmAt > 0 && this.alarmAt < until) until = Math.max(this.alarmAt, now + 1);
          let timer;
          await Promise.race([woken, new Promise((r) => (timer = setTimeout(r, until - now)))]);
          clearTimeout(timer);
          continue;
        }
      }
      const headers = new Headers();
      for (const [name, value] of resp.headers) if (!name.startsWith(RESERVED_PREFIX)) headers.append(name, value);
      headers.set("content-type", "application/json");
      return new Response(resp.body, { status: resp.status, headers });
    }
  }

  async alarm() {
    // The alarm that fired is gone; the module says when the next is due.
    this.alarmAt = 0;
    this.call(encodeRequest(KIND_ALARM, "", "", "", new Uint8Array(0), this.ownHeaders()));
  }
}
