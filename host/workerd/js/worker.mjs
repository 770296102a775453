// The Worker of a Stile deployment: a tiny router in front of one Durable
// Object per tenant, and the Durable Object class that runs the tenant
// module. Both are thin transports: the module (tenant.wasm) owns the API.
// `stile build` writes this file next to config.mjs (constants generated
// from the Go API package) and tenant.wasm.

import wasm from "./tenant.wasm";
import { authenticate, covers, pushToken } from "./token.mjs";
import { CONSOLE, CONSOLE_PATH, FAVICON, FAVICON_PATH } from "./console.mjs";
import {
  decodeResponse, encodeRequest, instantiate, validTraceparent,
  FLAG_FINISHED, FLAG_HOLD_FINISHED, FLAG_WAKE, HEADER_PRINCIPAL, HEADER_TRACEPARENT, KIND_ALARM, KIND_API, RESERVED_PREFIX,
  HEADER_HELD, HEADER_HOLD, HEADER_WOKE, changeFor, holdMatches, parseHold,
} from "./abi.mjs";
import {
  API_PREFIX, BODY_TOO_LARGE, EXECUTOR_PATH, HEADER_ABSENT, HEADER_CREATE, HEADER_DIRECTORY, HEADER_EXECUTOR, HEADER_PUSH, HEADER_DB_BYTES, HEADER_MODULE, HEADER_USAGE, HEADER_ROWS_READ, HEADER_ROWS_WRITTEN, HEADER_TENANT, MODULE_VERSION, HEADER_TOKEN_ID, STORAGE_SUFFIX, INTERNAL_PREFIX, ANSWER_LOST_PREFIX,
  HEADERS_TOO_LARGE, INVALID_TENANT, MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_TENANTS_PAGE, MAX_WAIT_MS, NO_ROUTE_HINT, PRINCIPAL_ADMIN, PUSH_FAILED,
  TENANTS_PATH, TENANT_PATTERN, WRONG_OBJECT, FAILING_PATH, HEADER_FAILING, MAX_FLEET_GROUPS, MAX_FLEET_GROUP_TENANTS,
  FLEET_OPERATIONS_PATH, FLEET_OPERATION_SLICE, FLEET_PROGRESS_READS, MAX_FLEET_OPERATIONS,
  HEADER_CHANGES, HEADER_WATCHED, HEADER_ROUTE, WATCH_PROTOCOL, WATCH_ROUTE, WATCH_SUFFIX, WATCH_TOKEN_PREFIX,
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
const answerLost = (cause) => json(500, { code: "committed_answer_lost", message: ANSWER_LOST_PREFIX + cause });

function decodedPath(url) {
  try {
    return decodeURIComponent(url.pathname);
  } catch {
    return url.pathname;
  }
}

const forbidden = (message) => json(403, { code: "forbidden", message });

// credential is a request's Authorization header or, for a watch that has
// none (a browser's WebSocket cannot set it), the token it offers as a
// subprotocol, as api.WatchAuthorization reads it.
function credential(request) {
  const auth = request.headers.get("authorization");
  if (auth !== null || request.method !== "GET" || !new URL(request.url).pathname.endsWith(WATCH_SUFFIX)) return auth ?? "";
  for (const p of (request.headers.get("sec-websocket-protocol") ?? "").split(",")) {
    const v = p.trim();
    if (v.startsWith(WATCH_TOKEN_PREFIX) && v.length > WATCH_TOKEN_PREFIX.length) return "Bearer " + v.slice(WATCH_TOKEN_PREFIX.length);
  }
  return "";
}

// checkPath refuses a path, as the client sent it, that names its resource
// ambiguously, with api.CheckPath's words: an empty segment ("//"; a
// trailing "/" on an API path), a "." or ".." segment (also percent-
// encoded), or a "%" not followed by two hex digits. new URL() would
// resolve the dots and answer for another tenant than the path reads.
function checkPath(rawURL) {
  const start = rawURL.indexOf("/", rawURL.indexOf("//") + 2);
  let escaped = start < 0 ? "/" : rawURL.slice(start);
  for (const sep of ["?", "#"]) {
    const i = escaped.indexOf(sep);
    if (i >= 0) escaped = escaped.slice(0, i);
  }
  if (escaped === "/") return null;
  const api = escaped.startsWith(API_PREFIX.slice(0, API_PREFIX.indexOf("/", 1) + 1));
  const segs = escaped.slice(1).split("/");
  const q = JSON.stringify(escaped);
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i];
    if (seg === "" && (i < segs.length - 1 || api)) {
      return `path ${q} has an empty segment (// or a trailing /): send ${API_PREFIX}{tenant}/… as docs/API.md spells it`;
    }
    if ([".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"].includes(seg.toLowerCase())) {
      return `path ${q} has a ${JSON.stringify(seg)} segment: send the path without . or .. segments`;
    }
    if (/%(?![0-9a-fA-F]{2})/.test(seg)) return `path ${q} has a % not followed by two hex digits: escape a % as %25`;
  }
  return null;
}

export default {
  async fetch(request, env) {
    let headerBytes = 0;
    for (const [name, value] of request.headers) headerBytes += name.length + value.length;
    if (headerBytes > MAX_HEADER_BYTES) return json(431, HEADERS_TOO_LARGE);
    const bad = checkPath(request.url);
    if (bad) return json(400, { code: "invalid_request", message: bad });
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return new Response("ok\n", { headers: { "content-type": "text/plain" } });
    if (url.pathname === CONSOLE_PATH || url.pathname.startsWith(CONSOLE_PATH + "/")) return consoleFile(url.pathname);
    if (url.pathname === FAVICON_PATH) return consoleFile(`${CONSOLE_PATH}/${FAVICON}`);
    if (!env.STILE_TOKEN) {
      return internal("the Worker has no STILE_TOKEN secret: run `npx wrangler secret put STILE_TOKEN`");
    }
    const who = await authenticate(credential(request), env);
    if (who.refusal) return json(who.status ?? 401, who.refusal);
    const path = decodedPath(url);
    if (path === TENANTS_PATH && who.scope !== "*") {
      return forbidden(`this token is for ${who.scope}: listing the tenants needs a token for every tenant (*)`);
    }
    if (path === TENANTS_PATH && env.DIRECTORY) return directory(env).fetch(request);
    if (path === FAILING_PATH && env.DIRECTORY) return directory(env).fetch(request);
    if ((path === FLEET_OPERATIONS_PATH || path.startsWith(FLEET_OPERATIONS_PATH + "/")) && env.DIRECTORY) return directory(env).fetch(request);
    if (!path.startsWith(API_PREFIX)) {
      return noRoute(request.method, path);
    }
    const rest = path.slice(API_PREFIX.length);
    const slash = rest.indexOf("/");
    const tenant = slash < 0 ? rest : rest.slice(0, slash);
    if (!tenantRe.test(tenant)) return json(400, INVALID_TENANT);
    if (!covers(who.scope, tenant)) return forbidden(`this token is for ${who.scope}, not tenant ${tenant}`);
    const over = await overQuota(request.method, tenant, who, env);
    if (over) return json(403, over);
    // The object checks the token and its own identity again: whoever
    // binds the Tenant class directly gets no further than this entry.
    return env.TENANT.get(env.TENANT.idFromName(tenant)).fetch(request);
  },
};

// overQuota refuses a write of a token scoped to a prefix ("acme-*") that
// would create a tenant beyond STILE_TENANT_QUOTA tenants of that prefix,
// as the directory counts them (server.WithTenantQuota in the Go host).
// A tenant the directory listed stays counted, so an isolate asks about it
// once, not on every write (a bounded set: past it, it asks again).
const listedTenants = new Set();

async function overQuota(method, tenant, who, env) {
  const quota = Number(env.STILE_TENANT_QUOTA ?? 0);
  if (!(quota > 0) || !env.DIRECTORY || (method !== "POST" && method !== "PUT")) return null;
  if (who.scope === "*" || !who.scope.endsWith("*") || listedTenants.has(tenant)) return null;
  const prefix = who.scope.slice(0, -1);
  const res = await directory(env).fetch(new Request("https://directory/count", {
    method: "POST",
    headers: { authorization: `Bearer ${env.STILE_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ prefix, tenant }),
  }));
  const c = await res.json();
  if (c.listed) {
    if (listedTenants.size >= 10000) listedTenants.clear();
    listedTenants.add(tenant);
  }
  if (c.listed || c.count < quota) return null;
  return { code: "tenant_quota", message: `this token's prefix ${who.scope} already has ${quota} tenants, the deployment's quota per prefix: erase one, or ask for a token of another prefix` };
}

// TENANT_KEY keeps an object's tenant name in its synchronous KV storage,
// where the runtime gives an id no name.
const TENANT_KEY = "stile-tenant";

// consoleFile serves the console and its icon, also at FAVICON_PATH
// (public: the shell holds no data, and every data call carries the
// user's token).
function consoleFile(path) {
  const f = CONSOLE[path.slice(CONSOLE_PATH.length + 1)] ?? CONSOLE["index.html"];
  return new Response(f.body, {
    headers: {
      "content-type": f.type,
      "cache-control": "no-cache",
      "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'",
      "referrer-policy": "no-referrer",
    },
  });
}

// directory is the stub of the deployment's one Directory object.
const directory = (env) => env.DIRECTORY.get(env.DIRECTORY.idFromName("directory"));

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
function requestHeaders(request, who, own) {
  const out = [];
  const tp = request.headers.get(HEADER_TRACEPARENT);
  if (validTraceparent(tp)) out.push([HEADER_TRACEPARENT, tp]);
  out.push([HEADER_PRINCIPAL, who.role], [HEADER_TOKEN_ID, who.id]);
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
    // one), else the one its first request's path named, kept so that an
    // alarm of a new instance knows it too.
    this.tenant = ctx.id.name ?? ctx.storage.kv?.get(TENANT_KEY) ?? "";
    this.module = null;
    this.alarmAt = undefined; // what was last set; undefined: unknown
    // The claims held (hold), and their count by token: each is woken
    // only by work it may claim (the module's stile-woke against the
    // claim's stile-hold), and the module hears how many are held
    // (stile-held) so that it answers one too many at once.
    this.held = new Set();
    this.heldBy = new Map();
    this.finishUp = null;
    this.finishAll = null;
    // The running count the module records as the tenant's usage
    // (stile-usage): requests and alarms as they start, the storage
    // cursors' rows as calls end. gen names this instance: a new one
    // counts from zero. Module time is not measured: workerd's clock
    // stands still while code runs, so it would always read 0.
    this.use = { gen: crypto.randomUUID().replaceAll("-", ""), requests: 0, alarms: 0, read: 0, written: 0 };
    this.newFinish();
  }

  // hold enters w among the held claims, waiting for the work its
  // stile-hold header describes; it returns the promise a matching wake
  // resolves.
  hold(w, header) {
    w.hold = parseHold(header);
    w.woken = new Promise((resolve) => (w.wake = resolve));
    if (!this.held.has(w)) {
      this.held.add(w);
      this.heldBy.set(w.token, (this.heldBy.get(w.token) ?? 0) + 1);
    }
    return w.woken;
  }

  // unhold takes w out of the held claims, if it is one.
  unhold(w) {
    if (!this.held.delete(w)) return;
    const n = this.heldBy.get(w.token) - 1;
    if (n > 0) this.heldBy.set(w.token, n);
    else this.heldBy.delete(w.token);
  }

  // wakeHeld wakes the held claims the work a stile-woke header describes
  // may satisfy; without one, every held claim.
  wakeHeld(header) {
    const woke = parseHold(header);
    for (const w of this.held) if (!woke || !w.hold || holdMatches(w.hold, woke)) w.wake();
  }

  newFinish() {
    this.finishUp = new Promise((resolve) => (this.finishAll = resolve));
  }

  // call runs one frame through the module. A trap discards the instance
  // (its transaction was rolled back by transactionSync) and rethrows.
  call(frame) {
    if (!this.module) this.module = instantiate(wasm, this.ctx.storage, this.instantiateOptions());
    const module = this.module;
    try {
      const resp = decodeResponse(this.module.handle(frame));
      resp.rows = { ...this.module.rows };
      this.after(resp);
      return resp;
    } catch (e) {
      this.module = null;
      throw e;
    } finally {
      // A trapped call's rows were rolled back, but were read and billed.
      this.use.read += module.rows.read;
      this.use.written += module.rows.written;
    }
  }

  // usageHeader is the running count, for the next call's frame.
  usageHeader() {
    const u = this.use;
    // "tail": the count goes with this instance, so the module sets an
    // alarm to record what is pending before the object may be evicted.
    return [HEADER_USAGE, `${u.gen},${u.requests},${u.alarms},${u.read},${u.written},0,tail`];
  }

  // instantiateOptions are the options of abi.mjs's instantiate; a
  // subclass may add a log function.
  instantiateOptions() {
    return {};
  }

  // ownHeaders are what the object tells the module about itself: which
  // tenant it is, and whether it can deliver pushes.
  // watched is the header saying the object has watches (hibernated or
  // not): only then does the module keep a call's changes.
  watched() {
    return this.ctx.getWebSockets().length > 0 ? [[HEADER_WATCHED, "1"]] : [];
  }

  ownHeaders() {
    const out = [];
    if (this.tenant) out.push([HEADER_TENANT, this.tenant]);
    if (this.env.EXECUTOR) out.push([HEADER_EXECUTOR, "binding"]);
    if (MODULE_VERSION) out.push([HEADER_MODULE, MODULE_VERSION]);
    out.push([HEADER_CREATE, this.env.STILE_CREATE_TENANTS || "writer"]);
    return out;
  }

  after(resp) {
    // A negative alarmAt (do.AlarmUnchanged) keeps the alarm as it is.
    if (resp.alarmAt >= 0 && resp.alarmAt !== this.alarmAt) {
      if (resp.alarmAt > 0) this.ctx.storage.setAlarm(resp.alarmAt);
      else this.ctx.storage.deleteAlarm();
      this.alarmAt = resp.alarmAt;
      resp.rows.written++; // Cloudflare bills a change of the alarm as a row written
      this.use.written++;
    }
    if (resp.flags & FLAG_WAKE) this.wakeHeld(resp.headers.find(([name]) => name === HEADER_WOKE)?.[1]);
    if (resp.flags & FLAG_FINISHED) {
      this.finishAll();
      this.newFinish();
    }
    const note = this.env.DIRECTORY && resp.headers.find(([name]) => name === HEADER_DIRECTORY);
    if (note) {
      const noted = this.noteDirectory(note[1]);
      this.ctx.waitUntil(noted);
      // An erasure answers once the directory forgot the tenant: a
      // listing right after it must not name the tenant.
      if (JSON.parse(note[1]).erased) resp.noted = noted;
    }
    const failing = this.env.DIRECTORY && resp.headers.find(([name]) => name === HEADER_FAILING);
    if (failing) this.ctx.waitUntil(this.noteDirectory(failing[1], "failing"));
    if (resp.headers.some(([name, value]) => name === HEADER_DIRECTORY && JSON.parse(value).erased)) {
      // Nothing of the tenant is left to follow.
      for (const ws of this.ctx.getWebSockets()) {
        try {
          ws.close(1001, "the tenant was erased");
        } catch {
          // already closed
        }
      }
    }
    const changes = resp.headers.find(([name]) => name === HEADER_CHANGES);
    if (changes) this.sendChanges(changes[1]);
    const push = this.env.EXECUTOR && resp.headers.find(([name]) => name === HEADER_PUSH);
    if (push) {
      // Outside the module's transaction, and never awaited by the
      // request: the executor answers at once and works on its own.
      const plan = JSON.parse(push[1]);
      for (const id of plan.ids) this.ctx.waitUntil(this.deliver(plan, id));
    }
  }

  // sendChanges sends a call's changes (stile-changes) to the watches
  // their filters let them through. The watches are the runtime's
  // hibernatable WebSockets, each with its filter as its attachment: the
  // object keeps nothing of them in memory, so an instance that was
  // evicted (or never saw the watch start) sends to them all the same.
  sendChanges(header) {
    const sockets = this.ctx.getWebSockets();
    if (sockets.length === 0) return;
    let c;
    try {
      c = JSON.parse(header);
    } catch {
      c = { more: true };
    }
    for (const ws of sockets) {
      const part = changeFor(c, ws.deserializeAttachment() ?? {});
      if (!part) continue;
      try {
        ws.send(JSON.stringify(part));
      } catch {
        // closing: the runtime drops it
      }
    }
  }

  // watch answers a watch the module accepted (its answer: the filter) by
  // accepting a hibernatable WebSocket, so an idle watch keeps the object
  // neither in memory nor billed.
  watch(request, filterBody) {
    if ((request.headers.get("upgrade") ?? "").toLowerCase() !== "websocket") {
      return json(426, { code: "upgrade_required", message: `GET /v1/t/${this.tenant}/watch is a WebSocket: send it as an upgrade (Upgrade: websocket)` });
    }
    const filter = JSON.parse(new TextDecoder().decode(filterBody));
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment(filter);
    const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
    const headers = offered.includes(WATCH_PROTOCOL) ? { "sec-websocket-protocol": WATCH_PROTOCOL } : {};
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  // A watch sends nothing the object reads.
  webSocketMessage() {}

  webSocketClose(ws, code) {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "");
    } catch {
      // already closed
    }
  }

  webSocketError() {}

  // noteDirectory tells the directory what the module said of the tenant
  // (its first use, ready or idle), or what is failing in it (to
  // "failing"); a failure never fails the tenant.
  async noteDirectory(note, to = "notify") {
    try {
      const res = await directory(this.env).fetch(new Request(`https://directory/${to}`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.env.STILE_TOKEN}`, "content-type": "application/json" },
        body: note,
      }));
      if (res.status !== 204) console.warn(`the directory refused a note: ${res.status} ${await res.text()}`);
    } catch (e) {
      console.warn(`could not note the tenant in the directory: ${e?.message ?? e}`);
    }
  }

  // deliver asks the executor to run a push; one it could not deliver is
  // ended as failed, and the module retries it from the alarm.
  async deliver(plan, id) {
    let why;
    try {
      // The executor gets a worker token for this tenant, never the
      // secret: its handler code runs as a worker.
      const push = await pushToken(this.env.STILE_TOKEN, plan.tenant);
      const res = await this.env.EXECUTOR.fetch(new Request("https://executor" + EXECUTOR_PATH, {
        method: "POST",
        headers: { authorization: `Bearer ${push}`, "content-type": "application/json" },
        body: JSON.stringify({ tenant: plan.tenant, id, jobs: plan.jobs, kinds: plan.kinds, reactions: plan.reactions, linger_ms: plan.linger_ms }),
      }));
      if (res.status === 202) return;
      why = `the executor answered ${res.status}: ${(await res.text()).slice(0, 200)}`;
    } catch (e) {
      why = `the executor could not be reached: ${String(e?.message ?? e).split("\n")[0]}`;
    }
    const body = new TextEncoder().encode(JSON.stringify({ end: PUSH_FAILED, error: why }));
    const path = `${API_PREFIX}${plan.tenant}/pushes/${id}/done`;
    try {
      this.call(encodeRequest(KIND_API, "POST", path, "", body, [[HEADER_PRINCIPAL, PRINCIPAL_ADMIN], ...this.ownHeaders(), ...this.watched(), this.usageHeader()]));
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
    const who = await authenticate(credential(request), this.env);
    if (who.refusal) return json(who.status ?? 401, who.refusal);
    const url = new URL(request.url);
    const path = decodedPath(url);
    const tenant = tenantOf(path);
    if (tenant && (!tenantRe.test(tenant) || !this.env.TENANT.idFromName(tenant).equals(this.ctx.id))) {
      return json(400, WRONG_OBJECT);
    }
    if (tenant && !covers(who.scope, tenant)) return forbidden(`this token is for ${who.scope}, not tenant ${tenant}`);
    // The name is kept once the tenant exists: a request for one that was
    // never created writes nothing, not even this.
    const keepName = tenant && !this.tenant && !this.ctx.id.name;
    if (tenant && !this.tenant) this.tenant = tenant;
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.length > MAX_BODY_BYTES) return json(413, BODY_TOO_LARGE);
    // Counted once it reaches the module, as the Go hosts count: a request
    // refused above is no use of the tenant's, and must not spend its
    // budget (anyone knowing its name could).
    this.use.requests++;
    const headers = requestHeaders(request, who, this.ownHeaders());
    if (request.method === "GET" && path.endsWith(STORAGE_SUFFIX)) {
      headers.push([HEADER_DB_BYTES, String(this.ctx.storage.sql.databaseSize)]);
    }
    const w = { token: who.id || who.role, hold: null, woken: null, wake: null, keepName: keepName ? tenant : "" };
    try {
      return await this.serve(request, path, url, body, headers, w);
    } finally {
      this.unhold(w);
    }
  }

  // serve runs a request through the module, holding it while it is an
  // empty long-poll claim (w: the claim, when held).
  async serve(request, path, url, body, frameHeaders, w) {
    let deadline = 0;
    // What the request read and wrote, over every run of a held claim.
    let rowsRead = 0, rowsWritten = 0;
    for (;;) {
      const finished = this.finishUp; // before the call, so no wake-up is missed
      // A claim held before is not counted while it runs again.
      this.unhold(w);
      const own = this.heldBy.get(w.token) ?? 0;
      const held = this.held.size > 0 ? [[HEADER_HELD, `${this.held.size},${own}`]] : [];
      const frame = encodeRequest(KIND_API, request.method, path, url.search.slice(1), body, frameHeaders.concat(held, this.watched(), [this.usageHeader()]));
      let resp;
      try {
        resp = this.call(frame);
      } catch (e) {
        const cause = `the tenant module trapped: ${String(e?.message ?? e).split("\n")[0]}`;
        // A trap after the call's transaction committed: what it wrote
        // stands, and the client must not take the 500 for "nothing".
        return e?.committed ? answerLost(cause) : internal(cause);
      }
      rowsRead += resp.rows.read;
      rowsWritten += resp.rows.written;
      if (resp.holdMs > 0) {
        const now = Date.now();
        if (!deadline) deadline = now + resp.holdMs;
        if (now < deadline) {
          let until = deadline;
          if (this.alarmAt > 0 && this.alarmAt < until) until = Math.max(this.alarmAt, now + 1);
          let timer;
          // A wait for a job to end, or a claim waiting for work it may
          // claim (entered now, before any other request runs).
          const hold = resp.headers.find(([name]) => name === HEADER_HOLD)?.[1];
          const wakes = resp.flags & FLAG_HOLD_FINISHED ? finished : this.hold(w, hold);
          await Promise.race([wakes, new Promise((r) => (timer = setTimeout(r, until - now)))]);
          clearTimeout(timer);
          continue;
        }
      }
      if (resp.noted) await resp.noted;
      if (w.keepName && !resp.headers.some(([name]) => name === HEADER_ABSENT)) this.ctx.storage.kv?.put(TENANT_KEY, w.keepName);
      if (resp.status === 200 && resp.headers.some(([name, value]) => name === HEADER_ROUTE && value === WATCH_ROUTE)) {
        return this.watch(request, resp.body);
      }
      const headers = new Headers();
      for (const [name, value] of resp.headers) if (!name.startsWith(RESERVED_PREFIX)) headers.append(name, value);
      if (!headers.has("content-type")) headers.set("content-type", "application/json"); // the module's own (GET /metrics) stands
      headers.set(HEADER_ROWS_READ, String(rowsRead));
      headers.set(HEADER_ROWS_WRITTEN, String(rowsWritten));
      return new Response(resp.body, { status: resp.status, headers });
    }
  }

  async alarm() {
    // The alarm that fired is gone; the module says when the next is due.
    this.alarmAt = 0;
    this.use.alarms++;
    this.call(encodeRequest(KIND_ALARM, "", "", "", new Uint8Array(0), [...this.ownHeaders(), ...this.watched(), this.usageHeader()]));
  }
}

// Directory is the deployment's tenant directory, one object: tenants
// note themselves in it on their first use and when they go from idle to
// having ready work or back (never on every request); executors without a
// tenant list long-poll it (GET /v1/tenants?ready=true&after_seq=…&wait_ms=…)
// instead of every tenant. The local host keeps the same directory in a
// file (host/directory).
export class Directory {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS tenants (name TEXT PRIMARY KEY, first_seen INTEGER NOT NULL,
      last_seen INTEGER NOT NULL, version INTEGER NOT NULL, ready INTEGER NOT NULL, seq INTEGER NOT NULL,
      module TEXT NOT NULL DEFAULT '', schema INTEGER NOT NULL DEFAULT 0, failed TEXT NOT NULL DEFAULT '') STRICT`);
    // A directory from before the tenants' versions gets their columns.
    const cols = new Set(this.sql.exec(`PRAGMA table_info(tenants)`).toArray().map((c) => c.name));
    if (!cols.has("module")) {
      this.sql.exec(`ALTER TABLE tenants ADD COLUMN module TEXT NOT NULL DEFAULT ''`);
      this.sql.exec(`ALTER TABLE tenants ADD COLUMN schema INTEGER NOT NULL DEFAULT 0`);
      this.sql.exec(`ALTER TABLE tenants ADD COLUMN failed TEXT NOT NULL DEFAULT ''`);
    }
    // A tenant's usage of the day it last reported, as JSON ('': none yet).
    if (!cols.has("usage")) this.sql.exec(`ALTER TABLE tenants ADD COLUMN usage TEXT NOT NULL DEFAULT ''`);
    // What the tenant last said is failing in it, as JSON (api.FailingNote; '': nothing).
    if (!cols.has("failing")) this.sql.exec(`ALTER TABLE tenants ADD COLUMN failing TEXT NOT NULL DEFAULT ''`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS directory_seq (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL) STRICT`);
    // Operations across tenants (api.FleetOperation): each tenant's part
    // is its own operation's id and figures as last read.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS fleet_ops (id INTEGER PRIMARY KEY AUTOINCREMENT, action TEXT NOT NULL, filter TEXT NOT NULL,
      prefix TEXT NOT NULL, state TEXT NOT NULL, cursor TEXT NOT NULL, given INTEGER NOT NULL, created_at INTEGER NOT NULL,
      done_at INTEGER) STRICT`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS fleet_op_tenants (op INTEGER NOT NULL, tenant TEXT NOT NULL, id TEXT NOT NULL,
      state TEXT NOT NULL, matched INTEGER NOT NULL, done INTEGER NOT NULL, skipped INTEGER NOT NULL, error TEXT NOT NULL,
      misses INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (op, tenant)) STRICT`);
    this.sql.exec(`INSERT OR IGNORE INTO directory_seq (id, seq) VALUES (1, 0)`);
    this.newWake();
  }

  newWake() {
    this.woken = new Promise((resolve) => (this.wakeAll = resolve));
  }

  async fetch(request) {
    // A body is read whole before any answer, refusals too: one left
    // unread can cost the connection it came on (the next request sent on
    // it is reset).
    const body = request.method === "GET" || request.method === "HEAD" ? "" : await request.text();
    const who = await authenticate(request.headers.get("authorization") ?? "", this.env);
    if (who.refusal) return json(who.status ?? 401, who.refusal);
    const url = new URL(request.url);
    if (url.pathname === "/notify" && request.method === "POST") {
      if (!who.admin) return forbidden("only the deployment's tenants note themselves in the directory");
      return this.note(JSON.parse(body));
    }
    if (url.pathname === "/count" && request.method === "POST") {
      if (!who.admin) return forbidden("only the deployment's Worker counts tenants");
      const q = JSON.parse(body);
      const count = this.sql.exec(`SELECT count(*) AS n FROM tenants WHERE substr(name, 1, length(?1)) = ?1`, String(q.prefix)).one().n;
      const listed = this.sql.exec(`SELECT 1 FROM tenants WHERE name = ?`, String(q.tenant)).toArray().length > 0;
      return json(200, { count, listed });
    }
    if (url.pathname === "/failing" && request.method === "POST") {
      if (!who.admin) return forbidden("only the deployment's tenants note what is failing in them");
      return this.noteFailing(JSON.parse(body));
    }
    if (url.pathname === FAILING_PATH) return this.failing(request, url, who);
    if (url.pathname === FLEET_OPERATIONS_PATH || url.pathname.startsWith(FLEET_OPERATIONS_PATH + "/")) return this.fleetOperations(request, url, who, body);
    if (who.scope !== "*") return forbidden(`this token is for ${who.scope}: listing the tenants needs a token for every tenant (*)`);
    if (url.pathname !== TENANTS_PATH) return noRoute(request.method, url.pathname);
    if (request.method !== "GET") {
      const r = json(405, { code: "method_not_allowed", message: `${request.method} ${TENANTS_PATH}: use GET` });
      r.headers.set("allow", "GET");
      return r;
    }
    const q = parseQuery(url.searchParams);
    if (q.error) return json(400, { code: "invalid_request", message: q.error });
    const deadline = Date.now() + q.waitMs;
    for (;;) {
      const woken = this.woken;
      const page = this.page(q);
      const left = deadline - Date.now();
      if (page.tenants.length > 0 || !q.ready || left <= 0) return json(200, page);
      let timer;
      await Promise.race([woken, new Promise((r) => (timer = setTimeout(r, left)))]);
      clearTimeout(timer);
    }
  }

  note(n) {
    if (typeof n?.tenant !== "string" || !tenantRe.test(n.tenant)) return json(400, INVALID_TENANT);
    const now = Date.now();
    const seq = this.sql.exec(`UPDATE directory_seq SET seq = seq + 1 WHERE id = 1 RETURNING seq`).one().seq;
    if (n.erased) {
      this.sql.exec(`DELETE FROM tenants WHERE name = ?`, n.tenant);
      return new Response(null, { status: 204 });
    }
    const old = this.sql.exec(`SELECT ready FROM tenants WHERE name = ?`, n.tenant).toArray()[0];
    // A note of the versions only keeps what the directory knows of readiness.
    if (n.versions_only && old) n.ready = old.ready === 1;
    const becameReady = !!n.ready && !old?.ready;
    // A note without usage keeps the usage the directory has.
    const usage = n.usage && typeof n.usage === "object" && n.usage.day ? JSON.stringify(n.usage) : "";
    this.sql.exec(`INSERT INTO tenants (name, first_seen, last_seen, version, ready, seq, module, schema, failed, usage)
      VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?7, ?8, ?9, ?10)
      ON CONFLICT (name) DO UPDATE SET last_seen = ?2, version = ?3, ready = ?4, seq = CASE WHEN ?6 THEN ?5 ELSE seq END,
      module = ?7, schema = ?8, failed = ?9, usage = CASE WHEN ?10 = '' THEN usage ELSE ?10 END`,
      n.tenant, now, n.version ?? 0, n.ready ? 1 : 0, becameReady ? seq : 0, becameReady ? 1 : 0,
      String(n.module ?? ""), Number(n.schema ?? 0), String(n.failed ?? ""), usage);
    if (becameReady) {
      this.wakeAll();
      this.newWake();
    }
    return new Response(null, { status: 204 });
  }

  // noteFailing records what a tenant said is failing in it (a tenant the
  // directory does not list is not listed by it).
  noteFailing(n) {
    if (typeof n?.tenant !== "string" || !tenantRe.test(n.tenant)) return json(400, INVALID_TENANT);
    const nothing = !(n.groups?.length > 0) && !(n.more > 0);
    this.sql.exec(`UPDATE tenants SET failing = ? WHERE name = ?`, nothing ? "" : JSON.stringify(n), n.tenant);
    return new Response(null, { status: 204 });
  }

  // failing answers GET /v1/failing as the Go host's directory does
  // (server.Server.failing, api.FleetFailing): the notes of the tenants
  // of ?prefix=, within the token's scope, summed by group.
  failing(request, url, who) {
    if (request.method !== "GET") {
      const r = json(405, { code: "method_not_allowed", message: `${request.method} ${FAILING_PATH}: use GET` });
      r.headers.set("allow", "GET");
      return r;
    }
    for (const k of url.searchParams.keys()) {
      if (k !== "prefix") return json(400, { code: "invalid_request", message: `unknown parameter "${k}": use prefix` });
      if (url.searchParams.getAll(k).length > 1) return json(400, { code: "invalid_request", message: `query parameter "${k}" is given twice` });
    }
    const scoped = scopePrefix(who.scope, url.searchParams.get("prefix") ?? "", `GET ${FAILING_PATH} (GET /v1/t/${who.scope}/failing reads its tenant's)`);
    if (scoped.refusal) return forbidden(scoped.refusal);
    const prefix = scoped.prefix;
    const notes = this.sql.exec(`SELECT failing FROM tenants WHERE failing != '' AND substr(name, 1, length(?1)) = ?1 ORDER BY name`, prefix)
      .toArray().map((r) => JSON.parse(r.failing));
    return json(200, fleetFailing(notes));
  }

  // fleetOperations answers FLEET_OPERATIONS_PATH and …/{id}, as the Go
  // host's server does (server/fleet.go): an operation across the tenants
  // of a prefix, given to them a slice at a time by this object's alarm.
  async fleetOperations(request, url, who, body) {
    const one = url.pathname.startsWith(FLEET_OPERATIONS_PATH + "/") ? url.pathname.slice(FLEET_OPERATIONS_PATH.length + 1) : null;
    const allow = (methods) => {
      const r = json(405, { code: "method_not_allowed", message: `${request.method} ${url.pathname}: use ${methods.join(" or ")}` });
      r.headers.set("allow", methods.join(", "));
      return r;
    };
    if (one !== null) return request.method === "GET" ? this.fleetOperation(one, who) : allow(["GET"]);
    if (request.method === "GET") {
      const ops = this.sql.exec(`SELECT * FROM fleet_ops ORDER BY id DESC`).toArray().filter((o) => visibleTo(who, o.prefix));
      return json(200, { operations: ops.map((o) => this.fleetView(o, false)) });
    }
    if (request.method !== "POST") return allow(["GET", "POST"]);
    if (who.role !== "admin" && who.role !== "operator") {
      return forbidden(`a ${who.role} token may not POST ${FLEET_OPERATIONS_PATH}: that needs admin or operator`);
    }
    let r;
    try {
      r = JSON.parse(body);
    } catch (e) {
      return json(400, { code: "invalid_request", message: `the body is not JSON: ${e.message}` });
    }
    if (r === null || typeof r !== "object" || Array.isArray(r) || Object.keys(r).some((k) => !["action", "filter", "prefix"].includes(k)) ||
      ["action", "filter", "prefix"].some((k) => r[k] !== undefined && typeof r[k] !== "string")) {
      return json(400, { code: "invalid_request", message: `the body is not {"action": "…", "filter": "…", "prefix": "…"} of strings` });
    }
    const req = { action: r.action ?? "", filter: r.filter ?? "", prefix: r.prefix ?? "" };
    if (!["retry", "cancel", "delete"].includes(req.action)) {
      return json(400, { code: "invalid_request", message: `action ${JSON.stringify(req.action)} is not retry, cancel or delete` });
    }
    const scoped = scopePrefix(who.scope, req.prefix, `POST ${FLEET_OPERATIONS_PATH} (POST /v1/t/${who.scope}/operations acts in its tenant)`);
    if (scoped.refusal) return forbidden(scoped.refusal);
    req.prefix = scoped.prefix;
    const first = this.fleetNames(req.prefix, "", 1);
    if (first.length === 0) return json(404, { code: "not_found", message: `no tenant's name starts with ${JSON.stringify(req.prefix)}: nothing to act on` });
    // The first tenant judges the filter: its 400 refuses the whole
    // operation, which then never existed (any other refusal is its own).
    const part = await this.giveTenant(req, first[0]);
    if (part.refused && part.status === 400) return json(part.status, part.body);
    const id = this.sql.exec(`INSERT INTO fleet_ops (action, filter, prefix, state, cursor, given, created_at) VALUES (?, ?, ?, 'running', '', 0, ?)
      RETURNING id`, req.action, req.filter, req.prefix, Date.now()).one().id;
    this.recordPart(id, part);
    const old = this.sql.exec(`SELECT id FROM fleet_ops WHERE state = 'done' ORDER BY id DESC LIMIT -1 OFFSET ?`, MAX_FLEET_OPERATIONS).toArray();
    for (const o of old) {
      this.sql.exec(`DELETE FROM fleet_op_tenants WHERE op = ?`, o.id);
      this.sql.exec(`DELETE FROM fleet_ops WHERE id = ?`, o.id);
    }
    await this.ctx.storage.setAlarm(Date.now());
    return json(202, this.fleetView(this.sql.exec(`SELECT * FROM fleet_ops WHERE id = ?`, id).one(), true));
  }

  fleetNames(prefix, after, limit) {
    return this.sql.exec(`SELECT name FROM tenants WHERE name > ?1 AND substr(name, 1, length(?2)) = ?2 ORDER BY name LIMIT ?3`,
      after, prefix, limit).toArray().map((r) => r.name);
  }

  // tenantCall sends one request to a tenant's object as the deployment.
  async tenantCall(tenant, method, path, body) {
    const stub = this.env.TENANT.get(this.env.TENANT.idFromName(tenant));
    const res = await stub.fetch(new Request(`https://tenant${API_PREFIX}${tenant}${path}`, {
      method, body, headers: { authorization: `Bearer ${this.env.STILE_TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
    }));
    const text = await res.text();
    let data = {};
    try { data = JSON.parse(text); } catch { data = { code: "internal", message: text }; }
    return { status: res.status, body: data };
  }

  // giveTenant starts the operation in one tenant: its part, or its refusal.
  async giveTenant(req, tenant) {
    let res;
    try {
      res = await this.tenantCall(tenant, "POST", "/operations", JSON.stringify({ action: req.action, filter: req.filter }));
    } catch (e) {
      return { tenant, refused: true, status: 500, error: String(e?.message ?? e) };
    }
    if (res.status !== 202) return { tenant, refused: true, status: res.status, body: res.body, error: `${res.status} ${res.body.code}: ${res.body.message}` };
    return { tenant, id: res.body.id, state: res.body.state, matched: res.body.matched, done: res.body.done, skipped: res.body.skipped };
  }

  recordPart(op, p) {
    this.sql.exec(`INSERT OR REPLACE INTO fleet_op_tenants (op, tenant, id, state, matched, done, skipped, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      op, p.tenant, p.id ?? "", p.refused ? "refused" : p.state, p.matched ?? 0, p.done ?? 0, p.skipped ?? 0, p.error ?? "");
    this.sql.exec(`UPDATE fleet_ops SET cursor = ? WHERE id = ? AND cursor < ?`, p.tenant, op, p.tenant);
  }

  // alarm gives the running operations to their next tenants, a slice
  // each, and comes back while any has tenants left to give.
  async alarm() {
    for (const o of this.sql.exec(`SELECT * FROM fleet_ops WHERE given = 0 ORDER BY id`).toArray()) {
      const names = this.fleetNames(o.prefix, o.cursor, FLEET_OPERATION_SLICE);
      for (const name of names) this.recordPart(o.id, await this.giveTenant(o, name));
      if (names.length < FLEET_OPERATION_SLICE) this.sql.exec(`UPDATE fleet_ops SET given = 1 WHERE id = ?`, o.id);
    }
    // Those given to every tenant are followed to their end, whether
    // anyone reads them or not, so that a list says done of one that is.
    for (const o of this.sql.exec(`SELECT * FROM fleet_ops WHERE given = 1 AND state = 'running' ORDER BY id`).toArray()) {
      await this.refreshFleetOp(o);
    }
    if (this.sql.exec(`SELECT 1 FROM fleet_ops WHERE given = 0 LIMIT 1`).toArray().length > 0) {
      await this.ctx.storage.setAlarm(Date.now());
    } else if (this.sql.exec(`SELECT 1 FROM fleet_ops WHERE state = 'running' LIMIT 1`).toArray().length > 0) {
      await this.ctx.storage.setAlarm(Date.now() + FLEET_FOLLOW_MS);
    }
  }

  // fleetOperation reads one operation, with the progress of up to
  // FLEET_PROGRESS_READS of its tenants' operations not known done.
  async fleetOperation(id, who) {
    const find = () => this.sql.exec(`SELECT * FROM fleet_ops WHERE id = ?`, /^[0-9]{1,15}$/.test(id) ? Number(id) : -1).toArray()[0];
    const o = find();
    if (!o || !visibleTo(who, o.prefix)) return json(404, { code: "not_found", message: `operation ${JSON.stringify(id)} does not exist` });
    await this.refreshFleetOp(o);
    return json(200, this.fleetView(find(), true));
  }

  // refreshFleetOp reads the progress of up to FLEET_PROGRESS_READS of o's
  // tenant parts not known done (reading a tenant's operation also runs
  // its next slice), and marks o done once all are.
  async refreshFleetOp(o) {
    const ask = this.sql.exec(`SELECT tenant, id FROM fleet_op_tenants WHERE op = ? AND state = 'running' ORDER BY tenant LIMIT ?`,
      o.id, FLEET_PROGRESS_READS).toArray();
    // A part another read ended stays ended (an alarm and a read may
    // cross): every write is of a part still running.
    const end = (p, why) => this.sql.exec(`UPDATE fleet_op_tenants SET state = 'refused', error = ? WHERE op = ? AND tenant = ? AND state = 'running'`,
      why, o.id, p.tenant);
    for (const p of ask) {
      let res;
      try {
        res = await this.tenantCall(p.tenant, "GET", `/operations/${encodeURIComponent(p.id)}`);
      } catch (e) {
        res = { status: 0, body: { code: "unreachable", message: String(e?.message ?? e) } };
      }
      if (res.status === 404 || res.status === 410) {
        // The tenant was erased, or imported over: its part is over.
        end(p, `its operation is gone (${res.status} ${res.body.code}: ${res.body.message})`);
        continue;
      }
      if (res.status !== 200) {
        // Read again next time, up to FLEET_MISSES in a row.
        const m = this.sql.exec(`UPDATE fleet_op_tenants SET misses = misses + 1 WHERE op = ? AND tenant = ? AND state = 'running' RETURNING misses`,
          o.id, p.tenant).toArray()[0];
        if (m && m.misses >= FLEET_MISSES) end(p, `its operation could not be read ${FLEET_MISSES} times in a row (${res.status} ${res.body.code}: ${res.body.message})`);
        continue;
      }
      this.sql.exec(`UPDATE fleet_op_tenants SET state = ?, matched = ?, done = ?, skipped = ?, misses = 0 WHERE op = ? AND tenant = ? AND state = 'running'`,
        res.body.state, res.body.matched, res.body.done, res.body.skipped, o.id, p.tenant);
    }
    const running = this.sql.exec(`SELECT count(*) AS n FROM fleet_op_tenants WHERE op = ? AND state NOT IN ('done', 'refused')`, o.id).one().n;
    this.sql.exec(`UPDATE fleet_ops SET state = 'done', done_at = ? WHERE id = ? AND given = 1 AND state = 'running' AND ? = 0`, Date.now(), o.id, running);
  }

  fleetView(o, withParts) {
    const parts = this.sql.exec(`SELECT * FROM fleet_op_tenants WHERE op = ? ORDER BY tenant`, o.id).toArray();
    const sum = (k) => parts.reduce((n, p) => n + p[k], 0);
    const v = {
      id: String(o.id), action: o.action, filter: o.filter, prefix: o.prefix, state: o.state, tenants: parts.length,
      matched: sum("matched"), done: sum("done"), skipped: sum("skipped"), refused: parts.filter((p) => p.state === "refused").length,
      created_at: new Date(o.created_at).toISOString(), ...(o.done_at ? { done_at: new Date(o.done_at).toISOString() } : {}),
    };
    if (withParts) {
      v.operations = parts.map((p) => ({ tenant: p.tenant, ...(p.id ? { id: p.id } : {}), state: p.state, matched: p.matched, done: p.done,
        skipped: p.skipped, ...(p.error ? { error: p.error } : {}) }));
    }
    return v;
  }

  page(q) {
    const rows = this.sql.exec(`SELECT name, first_seen, last_seen, version, ready, module, schema, failed, usage FROM tenants
      WHERE name > ?1 AND (?2 = 0 OR (ready = 1 AND seq > ?3)) ORDER BY name LIMIT ?4`,
      q.after, q.ready ? 1 : 0, q.afterSeq, q.limit + 1).toArray();
    const seq = this.sql.exec(`SELECT seq FROM directory_seq WHERE id = 1`).one().seq;
    const iso = (ms) => new Date(ms).toISOString();
    const tenants = rows.slice(0, q.limit).map((r) => ({
      name: r.name, first_seen: iso(r.first_seen), last_seen: iso(r.last_seen), version: r.version, ready: r.ready === 1,
      ...(r.module ? { module: r.module } : {}), ...(r.schema ? { schema: r.schema } : {}), ...(r.failed ? { failed: r.failed } : {}),
      ...(r.usage ? { usage: JSON.parse(r.usage) } : {}),
    }));
    const page = { tenants };
    if (rows.length > q.limit) page.next = tenants[tenants.length - 1].name;
    page.seq = seq;
    return page;
  }
}

// scopePrefix narrows a prefix of tenants to a token's scope, as
// api.ScopePrefix does.
function scopePrefix(scope, prefix, what) {
  if (scope === "*") return { prefix };
  if (!scope.endsWith("*")) return { refusal: `this token is for ${scope}: ${what} needs a token for a prefix or every tenant` };
  const p = scope.slice(0, -1);
  if (prefix.startsWith(p)) return { prefix };
  if (p.startsWith(prefix)) return { prefix: p };
  return { refusal: `this token is for ${scope}: prefix ${JSON.stringify(prefix)} names none of its tenants` };
}

// FLEET_FOLLOW_MS is how often the directory reads the progress of the
// tenants' parts of an operation it gave them all.
const FLEET_FOLLOW_MS = 1000;
// FLEET_MISSES bounds the reads of a tenant's part that may fail in a row
// before the part is given up (server/fleet.go's maxFleetMisses).
const FLEET_MISSES = 60;

// visibleTo says whether a token sees an operation of prefix: one within
// its scope.
function visibleTo(who, prefix) {
  const s = scopePrefix(who.scope, prefix, "");
  return !s.refusal && s.prefix === prefix;
}

// fleetFailing sums tenants' notes of what is failing in them into the
// fleet's view, as api.FleetFailing does.
function fleetFailing(notes) {
  const at = new Map();
  const resp = { groups: [], tenants: 0 };
  const partial = [];
  const iso = (ms) => (ms ? new Date(ms).toISOString().replace(".000Z", "Z") : undefined);
  for (const n of notes) {
    if (!(n.groups?.length > 0) && !(n.more > 0)) continue;
    resp.tenants++;
    if (n.more > 0) partial.push(n.tenant);
    for (const g of n.groups ?? []) {
      const k = JSON.stringify([g.what, g.name, g.state ?? "", g.error]);
      let f = at.get(k);
      if (!f) {
        f = { what: g.what, name: g.name, state: g.state ?? "", error: g.error, count: 0, first: 0, last: 0, tenant_count: 0, tenants: [] };
        at.set(k, f);
        resp.groups.push(f);
      }
      f.count += g.count;
      f.tenant_count++;
      if (g.first && (!f.first || g.first < f.first)) f.first = g.first;
      if (g.last > f.last) f.last = g.last;
      f.tenants.push({ tenant: n.tenant, count: g.count, ...(g.latest ? { latest: g.latest } : {}), ...(g.last ? { last_at: iso(g.last) } : {}) });
    }
  }
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  for (const g of resp.groups) {
    g.tenants.sort((a, b) => b.count - a.count || cmp(a.tenant, b.tenant));
    g.tenants = g.tenants.slice(0, MAX_FLEET_GROUP_TENANTS);
  }
  const keyOf = (g) => `${g.what} ${g.name} ${g.state} ${g.error}`;
  resp.groups.sort((a, b) => b.count - a.count || cmp(keyOf(a), keyOf(b)));
  resp.groups = resp.groups.slice(0, MAX_FLEET_GROUPS).map((g) => ({
    what: g.what, name: g.name, ...(g.state ? { state: g.state } : {}), error: g.error, count: g.count,
    ...(g.first ? { first_at: iso(g.first) } : {}), ...(g.last ? { last_at: iso(g.last) } : {}),
    tenant_count: g.tenant_count, tenants: g.tenants,
  }));
  partial.sort(cmp);
  if (partial.length > 0) resp.partial = partial;
  return resp;
}

// parseQuery reads a directory query as api.ParseTenantsQuery does, with
// the same refusals.
function parseQuery(params) {
  for (const k of params.keys()) {
    if (!["after", "limit", "ready", "after_seq", "wait_ms"].includes(k)) {
      return { error: `unknown parameter "${k}": use after, limit, ready, after_seq, wait_ms` };
    }
    if (params.getAll(k).length > 1) return { error: `query parameter "${k}" is given twice` };
  }
  const num = (k, lo, hi, def) => {
    const s = params.get(k);
    if (s === null || s === "") return def;
    if (!/^[0-9]{1,19}$/.test(s) || Number(s) < lo || Number(s) > hi) return { error: `${k} "${s}" is outside ${lo}-${hi}` };
    return Number(s);
  };
  const limit = num("limit", 1, MAX_TENANTS_PAGE, 100);
  if (limit.error) return limit;
  const ready = params.get("ready") ?? "";
  if (!["", "true", "false"].includes(ready)) return { error: `ready "${ready}" is not true or false` };
  const afterSeq = num("after_seq", 0, 2 ** 62, 0);
  if (afterSeq.error) return afterSeq;
  const waitMs = num("wait_ms", 0, MAX_WAIT_MS, 0);
  if (waitMs.error) return waitMs;
  return { after: params.get("after") ?? "", limit, ready: ready === "true", afterSeq, waitMs };
}
