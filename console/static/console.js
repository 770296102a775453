// Stile's console: a static app over the documented JSON API. The token
// lives in sessionStorage and travels only as a Bearer header, and as the
// WebSocket subprotocol of a tenant's live updates (a browser's WebSocket
// cannot set a header).
"use strict";

const TOKEN_KEY = "stile-token";
const POLL_MS = 3000;
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signout = document.getElementById("signout");

// ---- the API ----

class ApiError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
  });
  const text = await res.text();
  let data;
  try { data = text ? JSON.parse(text) : undefined; } catch { data = undefined; }
  if (res.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    render();
    throw new ApiError(401, "unauthorized", "the token was refused");
  }
  if (!res.ok) throw new ApiError(res.status, data?.code ?? "error", data?.message ?? text);
  return data;
}

const t = (tenant) => `/v1/t/${encodeURIComponent(tenant)}`;

// ---- live updates ----

// A tenant's pages follow its changes from GET /watch, a WebSocket (the
// tenant sends what each committed request changed): the pages it covers
// render again when a change concerns them, and are not polled while it
// is open. Should it fail or close, polling takes over, and a later page
// tries the socket again.
const LIVE_RETRY_MS = 10000;
let live = null; // { tenant, ws, open }
let liveRetryAt = 0;

function setLive(state) {
  document.body.dataset.live = state;
  document.getElementById("live")?.replaceChildren(state === "open" ? "live" : "");
}

function followLive(tenant) {
  if (live && live.tenant === tenant) return;
  live?.ws.close();
  live = null;
  setLive("off");
  if (!tenant || typeof WebSocket === "undefined" || Date.now() < liveRetryAt) return;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  let ws;
  try {
    ws = new WebSocket(`${scheme}://${location.host}${t(tenant)}/watch`, ["stile", `bearer.${sessionStorage.getItem(TOKEN_KEY)}`]);
  } catch {
    liveRetryAt = Date.now() + LIVE_RETRY_MS; // a token no subprotocol can carry: polling it is
    return;
  }
  const me = { tenant, ws, open: false };
  live = me;
  ws.onopen = () => {
    if (live !== me) return;
    me.open = true;
    setLive("open");
    render("live"); // what changed while it opened
  };
  ws.onmessage = (m) => {
    if (live !== me) return;
    let c;
    try { c = JSON.parse(m.data); } catch { return; }
    if (concerns(c)) render("live");
  };
  ws.onclose = () => {
    if (live !== me) return;
    live = null;
    liveRetryAt = Date.now() + LIVE_RETRY_MS;
    setLive("off");
  };
}

// The pages live updates cover: a job, the jobs, reactions, projections.
// Others (the tenants, the overview's usage, events) are polled.
function liveCovers(parts) {
  return parts[0] === "t" && ["jobs", "reactions", "projections"].includes(parts[2]);
}

// concerns says whether a change (api.Change) concerns the page shown.
function concerns(c) {
  const { parts } = route();
  if (c.more) return true;
  switch (parts[2]) {
    case "jobs": return parts[3] ? (c.jobs ?? []).some((j) => j.id === parts[3]) : (c.jobs ?? []).length > 0;
    case "reactions": return (c.reactions ?? []).length > 0;
    case "projections": return (c.projections ?? []).length > 0;
    default: return false;
  }
}

// ---- building the page (text only: data never becomes markup) ----

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : String(c));
  return e;
}

function table(columns, rows, id) {
  return el("table", { id },
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((cell, i) => el("td", { "data-label": columns[i] }, cell ?? "-"))))));
}

// A time in the viewer's zone, the raw value (RFC 3339, or Unix ms) on hover.
const LOCAL = new Intl.DateTimeFormat("en-US", { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
  second: "2-digit", fractionalSecondDigits: 3, hourCycle: "h23", timeZoneName: "short" });
function when(raw) {
  const d = new Date(raw ?? NaN);
  if (raw === "" || isNaN(d)) return raw ? String(raw) : "-";
  const p = Object.fromEntries(LOCAL.formatToParts(d).map((x) => [x.type, x.value]));
  return el("time", { datetime: d.toISOString(), title: String(raw) },
    `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond} ${p.timeZoneName}`);
}
// The server's texts with the times they hold shown by when: RFC 3339
// times, and the Unix ms of a lapsed lease ("… held it until 1765…").
const TIME_IN_TEXT = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)|(?<=until )\d{13}\b/g;
function withTimes(text) {
  if (!text) return text;
  const out = [];
  let at = 0;
  for (const m of text.matchAll(TIME_IN_TEXT)) {
    out.push(text.slice(at, m.index), when(/^\d+$/.test(m[0]) ? Number(m[0]) : m[0]));
    at = m.index + m[0].length;
  }
  out.push(text.slice(at));
  return out;
}
// A period of milliseconds as a duration: 500ms, 1s, 1m30s, 1h.
const period = (ms) => {
  const parts = [];
  for (const [unit, n] of [["h", 3600000], ["m", 60000], ["s", 1000]]) if (ms >= n) { parts.push(`${Math.floor(ms / n)}${unit}`); ms %= n; }
  if (ms || parts.length === 0) parts.push(`${ms}ms`);
  return parts.join("");
};
const link = (href, text) => el("a", { href }, text);
// Text that may hold a long word (a URL, JSON): it wraps anywhere, so that
// its column never widens the page.
const long = (text) => (text ? el("span", { class: "long" }, text) : text);

// What the API allows by a job's state: retry a dead or cancelled job
// (fencestore's Retry, else not_retryable), cancel one not finished
// (fence.Cancel, else finished), delete one finished (else not_finished).
const FINISHED = ["completed", "cancelled", "dead"];
const canRetry = (j) => j.state === "dead" || j.state === "cancelled";
const canCancel = (j) => !FINISHED.includes(j.state);
const canDelete = (j) => FINISHED.includes(j.state);
// The retry budget: max_attempts counts failures, not attempts (a snooze
// takes an attempt number without spending it, and an operator's Retry
// gives a fresh budget while attempt numbers go on), so "attempt N of M"
// could read "attempt 2 of 1".
const budget = (j) => `failures ${j.failures} of ${j.max_attempts}`;
// A completed job's last_error is an earlier attempt's: the API keeps it.
const earlier = (j) => j.state === "completed" && !!j.last_error;

function action(label, confirmText, run, danger) {
  return el("button", { class: danger ? "danger" : undefined, on: { click: async () => {
    if (!confirm(confirmText)) return;
    try { await run(); await render(); } catch (e) { alert(e.message); }
  } } }, label);
}

// ---- routes ----

function route() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(query ?? "") };
}

function tenantNav(tenant) {
  nav.replaceChildren(link("#/", "Tenants"), link("#/failing", "Failing"), ...(tenant ? [
    link(`#/t/${tenant}`, tenant),
    link(`#/t/${tenant}/jobs`, "Jobs"),
    link(`#/t/${tenant}/reactions`, "Reactions"),
    link(`#/t/${tenant}/projections`, "Projections"),
    link(`#/t/${tenant}/events`, "Events"),
  ] : []));
}

async function pageTenants() {
  tenantNav();
  const d = await api("GET", "/v1/tenants?limit=1000");
  return [el("h1", {}, "Tenants"),
    d.tenants.length === 0 ? el("p", { class: "muted" }, "No tenant yet: a tenant appears on its first request.") :
      table(["Tenant", "First seen", "Last seen", "Version", "Ready", "Usage reported", "Requests", "Rows written"],
        d.tenants.map((x) => [link(`#/t/${x.name}`, x.name), when(x.first_seen), when(x.last_seen), x.version, x.ready ? "yes" : "no",
          x.usage?.day, x.usage?.requests, x.usage?.rows_written]), "tenants"),
    el("p", { class: "muted" }, "Usage as each tenant last reported it (every 5 minutes while busy); a tenant's page has its exact figures.")];
}

// ---- what is failing across tenants ----

// The operation across tenants this tab started last: { hash, op }.
let fleetOperation;
function fleetProgress(op) {
  return el("p", { class: "why", id: "fleet-operation", "data-state": op.state },
    el("b", {}, `${ACTIONS[op.action] ?? op.action} of ${op.filter} in ${op.prefix ? `the tenants of ${op.prefix}*` : "every tenant"}: `),
    `${op.tenants} tenants · found ${op.matched} · done ${op.done} · skipped ${op.skipped}`,
    op.refused ? ` · ${op.refused} tenants refused` : null, ` · ${op.state === "done" ? "finished" : "running…"}`);
}
// The directory gives the operation to every tenant of the prefix; the
// page follows it until every tenant's part is done.
async function fleetBulk(action, filter, prefix) {
  let op = await api("POST", "/v1/operations", { action, filter, prefix });
  fleetOperation = { hash: location.hash, op };
  await render();
  while (op.state !== "done") {
    await new Promise((ok) => setTimeout(ok, OPERATION_POLL_MS));
    op = await api("GET", `/v1/operations/${encodeURIComponent(op.id)}`);
    if (fleetOperation.op.id !== op.id) return;
    fleetOperation.op = op;
    document.getElementById("fleet-operation")?.replaceWith(fleetProgress(op));
  }
  await render();
}

// Where a group's failures are, in a tenant: the jobs of its kind and
// state, the reaction's deliveries, the projection.
function groupLink(g, tenant) {
  switch (g.what) {
    case "job": return `#/t/${tenant}/jobs?state=${g.state}&kind=${encodeURIComponent(g.name)}`;
    case "reaction": return `#/t/${tenant}/reactions`;
    default: return `#/t/${tenant}/projections`;
  }
}
function newest(g, x) {
  if (!x.latest) return null;
  return g.what === "job" ? link(`#/t/${x.tenant}/jobs/${encodeURIComponent(x.latest)}`, `job ${x.latest}`) : `event ${x.latest}`;
}

async function pageFailing(query) {
  tenantNav();
  const prefix = query.get("prefix") ?? "";
  const d = await api("GET", `/v1/failing${prefix ? `?prefix=${encodeURIComponent(prefix)}` : ""}`);
  const form = el("form", { class: "filters", on: { submit: (e) => {
    e.preventDefault();
    const p = new FormData(e.target).get("prefix");
    document.activeElement?.blur();
    location.hash = p ? `#/failing?prefix=${encodeURIComponent(p)}` : "#/failing";
  } } }, el("label", {}, "tenants whose names start with", el("input", { name: "prefix", value: prefix, placeholder: "acme-" })),
  el("button", { type: "submit" }, "Show"));
  // Dead jobs run again by a retry of their kind in every tenant of the
  // prefix; retrying ones retry by themselves.
  const fix = (g) => g.what === "job" && g.state === "dead" ? el("button", { on: { click: async () => {
    const filter = `state=dead&kind=${g.name}`;
    if (!confirm(`Retry every dead ${g.name} job in ${prefix ? `the tenants of ${prefix}*` : "every tenant"}, whatever its error? The directory gives the retry to each tenant, and this page shows its progress.`)) return;
    try { await fleetBulk("retry", filter, prefix); } catch (e) { alert(e.message); }
  } } }, prefix ? `Retry in ${prefix}*` : "Retry in every tenant") : null;
  return [el("h1", {}, "Failing across tenants"), form,
    fleetOperation?.hash === location.hash ? fleetProgress(fleetOperation.op) : null,
    d.groups.length === 0 ? el("p", { class: "muted", id: "nothing-failing" }, "Nothing is failing in any tenant.") :
      table(["What", "Error", "Count", "Tenants", "First", "Last", "Newest", ""], d.groups.map((g) => [
        el("span", { class: "long" }, `${g.what} ${g.name}`, g.state ? el("span", { class: g.state === "dead" ? "error" : "muted" }, ` ${g.state}`) : null),
        long(g.error), g.count,
        [g.tenants.map((x, i) => [i ? ", " : null, link(groupLink(g, x.tenant), `${x.tenant} (${x.count})`)]),
          g.tenant_count > g.tenants.length ? ` and ${g.tenant_count - g.tenants.length} more` : null],
        when(g.first_at), when(g.last_at), g.tenants[0] ? [`${g.tenants[0].tenant}: `, newest(g, g.tenants[0])] : null, fix(g)]), "failing"),
    el("p", { class: "muted" }, `${d.tenants} tenants have something failing, as each told the directory (within about 30 s of a change).`,
      d.partial?.length ? ` ${d.partial.join(", ")} had more than they could tell: their own pages have all of it.` : null)];
}

async function pageOverview(tenant) {
  const [q, rs, ps, sc, lim, rates, u, f] = await Promise.all([api("GET", `${t(tenant)}/queues`), api("GET", `${t(tenant)}/reactions`),
    api("GET", `${t(tenant)}/projections`), api("GET", `${t(tenant)}/schedules`), api("GET", `${t(tenant)}/concurrency`),
    api("GET", `${t(tenant)}/rates`), api("GET", `${t(tenant)}/usage`), api("GET", `${t(tenant)}/failing`)]);
  const failing = [
    ...f.jobs.map((g) => [link(`#/t/${tenant}/jobs?state=${g.state}&kind=${encodeURIComponent(g.kind)}`, `job ${g.kind} ${g.state}`), long(g.error), g.count,
      when(g.first_at), when(g.last_at), link(`#/t/${tenant}/jobs/${encodeURIComponent(g.latest_job)}`, `job ${g.latest_job}`)]),
    ...f.reactions.map((r) => [link(`#/t/${tenant}/reactions`, `reaction ${r.name}`), long(r.error), r.failing, null, null, `event ${r.seq}`]),
    ...f.projections.map((p) => [link(`#/t/${tenant}/projections`, `projection ${p.name}`), long(p.error), 1, null, null, `event ${p.error_seq}`])];
  const limit = (n) => (n ? n : "no limit");
  const paused = new Set(q.paused ?? []);
  const states = ["available", "running", "scheduled", "retryable", "pending"];
  return [el("h1", {}, tenant),
    el("div", { class: "cards" },
      el("div", { class: "card" }, el("b", {}, q.queues.reduce((n, x) => n + (x.counts.available ?? 0), 0)), el("div", { class: "muted" }, "jobs ready")),
      el("div", { class: "card" }, el("b", {}, q.finished.dead ?? 0), el("div", { class: "muted" }, "dead jobs ", link(`#/t/${tenant}/jobs?state=dead`, "list"))),
      el("div", { class: "card" }, el("b", {}, rs.reactions.reduce((n, r) => n + r.lag, 0)), el("div", { class: "muted" }, "events reactions have to settle"))),
    el("h2", {}, "Failing now"),
    failing.length === 0 ? el("p", { class: "muted", id: "tenant-failing" }, "Nothing is failing.") :
      table(["What", "Error", "Count", "First", "Last", "Newest"], failing, "tenant-failing"),
    f.truncated ? el("p", { class: "muted" }, "Read from the newest 10,000 jobs of each state.") : null,
    el("h2", {}, "Queues"),
    ...q.queues.filter((x) => x.unhandled?.length).map((x) => el("p", { class: "why", id: `unhandled-${x.queue}` },
      el("b", {}, `Queue ${x.queue}: `), `no executor handles ${x.unhandled.join(", ")}: its ready jobs of ${x.unhandled.length > 1 ? "these kinds" : "this kind"} wait for a handler.`)),
    table(["Queue", ...states, "Oldest ready", "State", ""], q.queues.map((x) => [link(`#/t/${tenant}/jobs?queue=${x.queue}`, x.queue),
      ...states.map((s) => x.counts[s] ?? 0), when(x.oldest_ready_at), paused.has(x.queue) ? "paused" : "running",
      paused.has(x.queue)
        ? action("Resume", `Resume queue ${x.queue}?`, () => api("PUT", `${t(tenant)}/queues/${x.queue}`, { paused: false }))
        : action("Pause", `Pause queue ${x.queue}? Claims take nothing from it until resumed.`, () => api("PUT", `${t(tenant)}/queues/${x.queue}`, { paused: true }), true)]), "queues"),
    el("h2", {}, "Reactions"),
    table(["Reaction", "Kind", "Checkpoint", "Lag", "Open deliveries"], rs.reactions.map((r) => [link(`#/t/${tenant}/reactions`, r.name), r.kind, r.checkpoint, r.lag, r.open.length])),
    el("h2", {}, "Projections"),
    table(["Projection", "Status", "Checkpoint", "Lag"], ps.projections.map((p) => [link(`#/t/${tenant}/projections`, p.name), p.live?.status, p.live?.checkpoint, p.live?.lag])),
    el("h2", {}, "Schedules"),
    table(["Schedule", "Cron", "Next", "Last", "Declared by"], sc.schedules.map((s) => [s.name, s.cron, when(s.next_at), when(s.last_at), s.module ? "the module" : "the tenant"])),
    el("h2", {}, "Concurrency keys"),
    table(["Key", "Slots", "In use"], lim.limits.map((l) => [l.key, l.slots, l.in_use])),
    el("h2", {}, "Rate limits"),
    table(["Key", "Limit", "Declared by", "In window", "Opens at", "Started", "Limited"], rates.rates.map((r) => [r.key,
      `${r.limit} per ${period(r.period_ms)}`, `the ${r.source}`, r.in_window, when(r.open_at), r.started, r.limited]), "rates"),
    el("h2", {}, "Usage by UTC day"),
    u.refusing ? el("p", { class: "why", id: "refusing" }, el("b", {}, "Refusing new work: "), `past ${u.refusing}, until `, when(u.refusing_until), ".") : null,
    el("p", { class: "muted" }, `Budget: rows written per day ${limit(u.budget.rows_written_per_day)}, requests per day ${limit(u.budget.requests_per_day)}.`),
    table(["Day", "Requests", "Alarms", "Rows read", "Rows written", "Module s", "Pushes"],
      [...u.days, { day: "total", ...u.total }].map((d) => [d.day, d.requests, d.alarms, d.rows_read, d.rows_written,
        (d.module_us / 1e6).toFixed(3), d.pushes]), "usage")];
}

// The search box takes what stile jobs --where takes, GET /jobs's query
// (args.customer.id=42&tag=vip&error=timeout); the state, queue and kind
// fields win over the same names in it, as the CLI's flags do. The filter
// is that query without after and limit: what a bulk operation takes.
function jobsFilter(query) {
  const f = new URLSearchParams(query.get("where") ?? "");
  for (const k of ["state", "queue", "kind"]) if (query.get(k)) f.set(k, query.get(k));
  f.delete("after");
  f.delete("limit");
  return f;
}

// The bulk operation this tab started last, shown on the list it was
// started from: { hash, op }.
let operation;
const OPERATION_POLL_MS = 300;
const ACTIONS = { retry: "Retry", cancel: "Cancel", delete: "Delete" };
function progress(op) {
  const state = op.state === "done" ? "finished" : "running…";
  if (op.action === "replay") {
    return el("p", { class: "why", id: "operation", "data-state": op.state }, el("b", {}, `Replay of ${op.reaction} from event ${op.from_seq} to ${op.until_seq}: `),
      `found ${op.matched} · delivered again ${op.done} · still open ${op.skipped} · ${state}`);
  }
  return el("p", { class: "why", id: "operation", "data-state": op.state }, el("b", {}, `${ACTIONS[op.action] ?? op.action} by ${op.filter}: `),
    `found ${op.matched} · done ${op.done} · skipped ${op.skipped} · ${state}`,
    op.last_skip ? [" · last skipped: ", long(withTimes(op.last_skip))] : null);
}
// The tenant runs the operation (its alarm, 100 jobs or deliveries at a
// time); the page polls its progress until it is done, then renders again.
async function bulk(tenant, action, filter) {
  return followOperation(tenant, { action, filter });
}
async function followOperation(tenant, request) {
  let op = await api("POST", `${t(tenant)}/operations`, request);
  operation = { hash: location.hash, op };
  await render();
  while (op.state !== "done") {
    await new Promise((ok) => setTimeout(ok, OPERATION_POLL_MS));
    op = await api("GET", `${t(tenant)}/operations/${encodeURIComponent(op.id)}`);
    if (operation.op.id !== op.id) return; // another one started since
    operation.op = op;
    document.getElementById("operation")?.replaceWith(progress(op));
  }
  await render();
}

async function pageJobs(tenant, query) {
  const filter = jobsFilter(query);
  const params = new URLSearchParams(filter);
  if (query.get("after")) params.set("after", query.get("after"));
  params.set("limit", "50");
  let d, refused;
  try {
    d = await api("GET", `${t(tenant)}/jobs?${params}`);
  } catch (e) {
    if (e.status !== 400) throw e;
    refused = el("p", { class: "error", id: "search-error" }, e.message); // a search the API refuses: say why, keep the form
  }
  const field = (name, options) => el("label", {}, name, options
    ? el("select", { name }, ["", ...options].map((o) => el("option", { value: o, selected: query.get(name) === o }, o || "any")))
    : el("input", { name, value: query.get(name) ?? "" }));
  const form = el("form", { class: "filters", on: { submit: (e) => {
    e.preventDefault();
    const f = new URLSearchParams(new FormData(e.target));
    for (const [k, v] of [...f]) if (!v) f.delete(k);
    document.activeElement?.blur(); // render keeps a focused form: this one is done with
    location.hash = `#/t/${tenant}/jobs?${f}`;
  } } }, field("state", ["pending", "scheduled", "available", "running", "retryable", "completed", "dead", "cancelled"]),
  field("queue"), field("kind"),
  el("label", { class: "search" }, "search (as stile jobs --where)",
    el("input", { name: "where", value: query.get("where") ?? "", placeholder: "args.customer.id=42&tag=vip&error=timeout" })),
  el("button", { type: "submit" }, "Search"));
  // The action follows the state searched: retry dead or cancelled jobs,
  // cancel unfinished ones; the tenant acts on every job the filter finds.
  const state = filter.get("state");
  const verb = state === "dead" || state === "cancelled" ? "retry" : state && !FINISHED.includes(state) ? "cancel" : undefined;
  const button = verb && el("button", { class: verb === "cancel" ? "danger" : undefined, on: { click: async () => {
    if (!confirm(`${ACTIONS[verb]} every job that ${filter} finds, not only those listed? The tenant runs it, and this page shows its progress.`)) return;
    try { await bulk(tenant, verb, filter.toString()); } catch (e) { alert(e.message); }
  } } }, `${ACTIONS[verb]} every ${state} job found`);
  const next = new URLSearchParams(query);
  next.set("after", d?.next ?? "");
  return [el("h1", {}, `Jobs of ${tenant}`), form,
    operation?.hash === location.hash ? progress(operation.op) : null,
    button ? el("div", { class: "actions", id: "bulk" }, button) : null,
    refused ?? [
      table(["Job", "Kind", "Queue", "State", "Attempt", "Failures", "Created", "Last error"], d.jobs.map((j) => [link(`#/t/${tenant}/jobs/${j.id}`, j.id),
        j.kind, j.queue, j.state, j.attempt, `${j.failures} of ${j.max_attempts}`, when(j.created_at),
        j.last_error ? [earlier(j) ? el("span", { class: "muted" }, "earlier attempt: ") : null, long(withTimes(j.last_error.split("\n")[0]))] : null]), "jobs"),
      // A search reads at most 10,000 jobs a page: a page may find none
      // and still have more to read.
      d.jobs.length || d.next ? null : el("p", { class: "muted" }, "No job found."),
      d.next ? el("p", { id: "more" }, d.jobs.length ? null : "None found among the jobs this page read. ",
        link(`#/t/${tenant}/jobs?${next}`, d.jobs.length ? "Next page" : "Search further")) : null]];
}

async function pageJob(tenant, id) {
  const j = await api("GET", `${t(tenant)}/jobs/${encodeURIComponent(id)}`);
  const attempts = [...(j.attempts ?? []), ...(j.running ? [{ ...j.running, outcome: "running" }] : [])];
  return [el("h1", {}, `Job ${j.id} · ${j.kind}`),
    el("p", { id: "summary" }, `${j.state} · queue ${j.queue} · attempt ${j.attempt} · ${budget(j)} · created `, when(j.created_at),
      j.rate_key ? ` · rate key ${j.rate_key}` : null, j.concurrency_key ? ` · concurrency key ${j.concurrency_key}` : null),
    j.progress !== undefined ? el("p", { id: "progress" }, el("b", {}, "Progress: "), long(JSON.stringify(j.progress))) : null,
    j.ran_again ? el("p", { class: "why", id: "why" }, el("b", {}, "Why it ran again: "), j.ran_again) : null,
    j.waiting ? el("p", { class: "why", id: "waiting" }, el("b", {}, "Why it waits: "), withTimes(j.waiting)) : null,
    el("div", { class: "actions", id: "actions" },
      canRetry(j) ? action("Retry", `Retry job ${j.id}?`, () => api("POST", `${t(tenant)}/jobs/${j.id}/retry`)) : null,
      canCancel(j) ? action("Cancel", `Cancel job ${j.id}?`, () => api("POST", `${t(tenant)}/jobs/${j.id}/cancel`, { reason: "cancelled from the console" }), true) : null,
      canDelete(j) ? action("Delete", `Delete job ${j.id} with its history?`, async () => { await api("DELETE", `${t(tenant)}/jobs/${j.id}`); location.hash = `#/t/${tenant}/jobs`; }, true) : null),
    el("h2", {}, "Timeline"),
    table(["Attempt", "Worker", "Claimed", "Lease until", "Heartbeats", "Last heartbeat", "Ended", "Outcome", "Noticed by", "Error"],
      attempts.map((a) => [a.attempt, a.worker, when(a.claimed_at), when(a.lease_until), a.heartbeats ?? 0, when(a.last_heartbeat_at),
        when(a.ended_at), a.outcome, a.noticed_by, long(withTimes(a.error?.split("\n")[0]))]), "attempts"),
    el("h2", {}, "Refused by the fence"),
    (j.rejections ?? []).length === 0 ? el("p", { class: "muted" }, "Nothing was refused.") :
      table(["At", "Request", "Worker", "Attempt", "Outcome", "Code", "Reason"], j.rejections.map((r) => [when(r.at), r.request, r.worker,
        r.attempt, r.outcome, el("span", { class: "refused" }, r.code), long(withTimes(r.message))]), "rejections"),
    el("h2", {}, "Args"), el("pre", {}, JSON.stringify(j.args, null, 2)),
    j.output !== undefined ? [el("h2", {}, "Output"), el("pre", {}, JSON.stringify(j.output, null, 2))] : null,
    j.last_error ? [el("h2", { id: "last-error-title" }, earlier(j) ? "Earlier attempt's error" : "Last error"),
      earlier(j) ? el("p", { class: "muted" }, "The job completed after it: this is what its last failed attempt reported.") : null,
      el("pre", { class: earlier(j) ? undefined : "error", id: "last-error" }, withTimes(j.last_error))] : null];
}

// Replay a policy from an event: the tenant delivers it every event of its
// types from there to its checkpoint again, in order (a process cannot be
// replayed: the API refuses it).
function replayForm(tenant, r) {
  if (r.kind !== "policy" || r.checkpoint < 1) return null;
  return el("form", { class: "filters replay", id: `replay-${r.name}`, on: { submit: async (e) => {
    e.preventDefault();
    const from = Number(new FormData(e.target).get("from_seq"));
    document.activeElement?.blur();
    if (!confirm(`Deliver every event of ${r.name} from event ${from} to ${r.checkpoint} again, in order? Each is a new delivery: what its handler does and records happens again.`)) return;
    try { await followOperation(tenant, { action: "replay", reaction: r.name, from_seq: from }); } catch (err) { alert(err.message); }
  } } }, el("label", {}, "from event", el("input", { name: "from_seq", type: "number", min: "1", max: String(r.checkpoint), value: "1", required: true })),
  el("button", { type: "submit" }, "Replay from"));
}

async function pageReactions(tenant) {
  const rs = await api("GET", `${t(tenant)}/reactions`);
  return [el("h1", {}, `Reactions of ${tenant}`), el("p", { class: "muted" }, `Log head: event ${rs.head}`),
    operation?.hash === location.hash ? progress(operation.op) : null,
    ...rs.reactions.map((r) => [el("h2", {}, `${r.name} (${r.kind})`),
      el("p", {}, `checkpoint ${r.checkpoint} · lag ${r.lag} · timeout ${r.timeout_ms} ms · events ${r.types.join(", ")}`),
      replayForm(tenant, r),
      r.open.length === 0 ? el("p", { class: "muted" }, "No open delivery.") :
        table(["Event", "State", "Attempt", "Failures", "Lease until", "Retry at", "Last error", ""], r.open.map((o) => [o.seq, o.state, o.attempt,
          o.failures, when(o.lease_until), when(o.run_at), long(withTimes(o.last_error)),
          action("Skip", `Skip event ${o.seq} for ${r.name}? It is never delivered to it again.`,
            () => api("POST", `${t(tenant)}/reactions/${r.name}/skip`, { seq: o.seq, reason: "skipped from the console" }), true)]))])];
}

async function pageProjections(tenant) {
  const ps = await api("GET", `${t(tenant)}/projections`);
  return [el("h1", {}, `Projections of ${tenant}`),
    table(["Projection", "Generation", "Status", "Checkpoint", "Lag", "Error", ""], ps.projections.flatMap((p) =>
      [["live", p.live], ["rebuild", p.rebuild]].filter(([, g]) => g).map(([role, g]) => [p.name, `${role} #${g.generation}`, g.status,
        `${g.checkpoint} of ${p.head}`, g.lag, g.error ? long(`event ${g.error_seq}: ${g.error}`) : null,
        role === "live" ? action("Rebuild", `Rebuild ${p.name} from the start of the log? The live one serves queries until the new one catches up.`,
          () => api("POST", `${t(tenant)}/projections/${p.name}/rebuild`)) : null])), "projections")];
}

async function pageEvents(tenant, query) {
  const stream = query.get("stream");
  const d = stream ? await api("GET", `${t(tenant)}/streams/${encodeURIComponent(stream)}?limit=200`)
    : await api("GET", `${t(tenant)}/events?after=${Number(query.get("after") ?? 0)}&limit=200`);
  return [el("h1", {}, stream ? `Stream ${stream}` : `Events of ${tenant}`),
    table(["Seq", "Stream", "Version", "Type", "At", "Data"], d.events.map((e) => [e.seq, link(`#/t/${tenant}/events?stream=${encodeURIComponent(e.stream)}`, e.stream),
      e.version, e.type, when(e.at), long(JSON.stringify(e.data))]), "events")];
}

// ---- the shell ----

function signIn() {
  nav.replaceChildren();
  signout.hidden = true;
  const input = el("input", { type: "password", name: "token", autocomplete: "off", placeholder: "the deployment's token" });
  return [el("form", { class: "signin", on: { submit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    render();
  } } }, el("h1", {}, "Sign in"), el("p", { class: "muted" }, "The token stays in this tab (sessionStorage) and is sent only as a Bearer header (for live updates, as the WebSocket's subprotocol)."),
  input, el("button", { type: "submit" }, "Sign in"))];
}

// render shows the page the location names; cause says what asked (a
// navigation, "poll" or "live"), kept on main for the tests.
let rendering = false, again = null;
async function render(cause = "navigation") {
  if (rendering) { again = cause; return; } // once this one ends: it may have read the API before what asked
  rendering = true;
  try {
    if (!sessionStorage.getItem(TOKEN_KEY)) {
      followLive(null);
      main.replaceChildren(...signIn());
      return;
    }
    signout.hidden = false;
    const { parts, query } = route();
    let page;
    followLive(parts[0] === "t" && parts[1] ? parts[1] : null);
    if (parts[0] === "t" && parts[1]) {
      tenantNav(parts[1]);
      switch (parts[2]) {
        case undefined: page = await pageOverview(parts[1]); break;
        case "jobs": page = parts[3] ? await pageJob(parts[1], parts[3]) : await pageJobs(parts[1], query); break;
        case "reactions": page = await pageReactions(parts[1]); break;
        case "projections": page = await pageProjections(parts[1]); break;
        case "events": page = await pageEvents(parts[1], query); break;
        default: page = [el("p", {}, "No such page.")];
      }
    } else if (parts[0] === "failing") {
      page = await pageFailing(query);
    } else {
      page = await pageTenants();
    }
    if (document.activeElement?.closest?.("form.filters")) return; // do not pull a form from under the user
    main.replaceChildren(...[page].flat(3).filter(Boolean));
    main.dataset.loaded = location.hash || "#/";
    main.dataset.updatedBy = cause;
  } catch (e) {
    if (sessionStorage.getItem(TOKEN_KEY)) main.replaceChildren(el("p", { class: "error", id: "failure" }, e.message));
  } finally {
    rendering = false;
    if (again) { const c = again; again = null; render(c); }
  }
}

signout.addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); render(); });
window.addEventListener("hashchange", () => render());
// Polling while the tab is visible; a page live updates follow is polled
// every LIVE_POLL_MS only, for what no change message carries (a
// heartbeat without progress, a refused report, the log's head).
const LIVE_POLL_MS = 30000;
let lastPoll = Date.now();
setInterval(() => {
  if (document.visibilityState !== "visible") return;
  const followed = live?.open && liveCovers(route().parts);
  if (followed && Date.now() - lastPoll < LIVE_POLL_MS) return;
  lastPoll = Date.now();
  render("poll");
}, POLL_MS);
render();
