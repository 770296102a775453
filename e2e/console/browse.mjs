// Drives the console in headless Chromium (Debian's, through
// playwright-core) for e2e/console_test.go, and exits non-zero on the
// first check that fails. Usage:
//   STILE_NODE_DIR=… node browse.mjs <mode> <base url> <token> <tenant> <ran-twice job> <dead job> <rate-limited job> <long-error job> <customer 42's dead jobs, a,b,c> <customer 7's dead job> <screenshots dir> [<waiting tenant>]
// mode "full" walks every page and action; "load" signs in and loads the
// pages once (for workerd).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [mode, base, token, tenant, twice, dead, rated, long, customer, other, shots, waiting] = process.argv.slice(2);
const nodeDir = process.env.STILE_NODE_DIR;
if (!nodeDir) throw new Error("STILE_NODE_DIR is not set: run this through the Go test");
const pw = await import(pathToFileURL(createRequire(nodeDir + "/").resolve("playwright-core")).href);
const chromium = pw.chromium ?? pw.default.chromium; // a CommonJS module

const browser = await chromium.launch({ executablePath: process.env.STILE_CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
const results = [];
function check(ok, what) {
  results.push({ ok: !!ok, what });
  if (!ok) throw new Error(`check failed: ${what}`);
}
// A time as the console shows it in Asia/Kolkata.
const kolkata = (raw) => new Date(new Date(raw).getTime() + 330 * 60000).toISOString().replace("T", " ").replace("Z", " GMT+5:30");
const api = async (method, path, body) => {
  const r = await fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body) });
  return r.json();
};

async function open(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForFunction((h) => document.getElementById("main").dataset.loaded === h, hash, { timeout: 10000 });
}

// The labels of the buttons in selector (none when it is absent).
const buttons = (page, selector) => page.$$eval(`${selector} button`, (bs) => bs.map((b) => b.textContent));
// The ids the jobs list shows, in order.
const listedIds = (page) => page.$$eval("#jobs tbody tr td:first-child", (tds) => tds.map((td) => td.textContent));

async function noHorizontalScroll(page, what) {
  const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  check(sw <= cw, `${what}: no horizontal scroll at 390 px (scrollWidth ${sw}, clientWidth ${cw})`);
}

try {
  // Static assets need no token: the icon browsers ask for on every page.
  const icon = await fetch(base + "/favicon.ico");
  check(icon.status === 200 && icon.headers.get("content-type") === "image/svg+xml",
    `GET /favicon.ico without a token answers the icon: ${icon.status} ${icon.headers.get("content-type")}`);

  // The viewer's zone (UTC+5:30, no daylight saving): times show in it.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: "Asia/Kolkata" });
  const page = await context.newPage();
  page.on("dialog", (d) => d.accept()); // every action's confirmation
  const refused = []; // whatever the signed-in console loads answers 401
  page.on("response", (r) => { if (r.status() === 401) refused.push(r.url()); });
  await page.goto(base + "/console");
  await page.waitForSelector("form.signin");
  check(await page.evaluate(() => document.cookie === ""), "the shell sets no cookie");
  await page.fill("input[name=token]", token);
  await page.click("form.signin button");
  await page.waitForSelector("#tenants");
  check((await page.textContent("#tenants")).includes(tenant), "the tenants page lists the tenant");
  check(await page.evaluate(() => !location.href.includes("stile") || !location.href.includes(sessionStorage.getItem("stile-token"))), "no token in the URL");

  await open(page, `#/t/${tenant}`);
  check(await page.isVisible("#queues"), "the overview shows the queues");
  const total = await page.textContent("#usage tbody tr:last-child");
  check(/^total[1-9]\d*/.test(total), `the overview shows the tenant's usage, with its requests: ${total}`);
  const own = await page.textContent("#tenant-failing");
  check(own.includes("job test.echo dead") && own.includes("the customer's provider answered #"),
    `the overview shows what is failing in the tenant: ${own}`);
  await page.screenshot({ path: join(shots, "overview.png"), fullPage: true });
  await open(page, `#/t/${tenant}/jobs/${twice}`);
  const why = await page.textContent("#why");
  check(why.includes("ran 2 times") && why.includes("lease_expired"), `the timeline says why the job ran twice: ${why}`);
  check((await page.$$("#attempts tbody tr")).length === 2, "the timeline shows both attempts");
  check((await page.textContent("#rejections")).includes("lease_expired"), "the refused report's code is on the page");
  await page.screenshot({ path: join(shots, "job.png"), fullPage: true });

  // Times in the viewer's zone, the raw value on hover.
  const job = await api("GET", `/v1/t/${tenant}/jobs/${twice}`);
  const created = await page.$eval("#summary time", (e) => [e.textContent, e.title]);
  check(created[0] === kolkata(job.created_at) && created[1] === job.created_at,
    `the job's creation shows in the viewer's zone, the raw time on hover: ${created} (created_at ${job.created_at})`);
  const lapsed = await page.$eval("#attempts tbody tr:first-child td:last-child", (e) => [e.textContent, e.querySelector("time")?.title]);
  check(/^lease of attempt 1 expired \(worker worker-a held it until \d{4}-\d\d-\d\d .* GMT\+5:30\)$/.test(lapsed[0]) &&
    lapsed[0].includes(kolkata(Number(lapsed[1]))), `the lapsed lease's Unix ms show as a time: ${lapsed}`);

  // Actions offered by the job's state, as the API allows them.
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  let offered = await buttons(page, "#actions");
  check(same(offered, ["Delete"]), `a completed job offers neither Retry nor Cancel: ${offered}`);
  await open(page, `#/t/${tenant}/jobs/${dead}`);
  offered = await buttons(page, "#actions");
  check(same(offered, ["Retry", "Delete"]), `a dead job offers Retry, not Cancel: ${offered}`);
  await open(page, `#/t/${tenant}/jobs/${rated}`);
  offered = await buttons(page, "#actions");
  check(same(offered, ["Cancel"]), `an available job offers Cancel only: ${offered}`);
  await open(page, `#/t/${tenant}/jobs?state=completed`);
  offered = await buttons(page, "#bulk");
  check(offered.length === 0, `a list of completed jobs offers no bulk action: ${offered}`);
  await open(page, `#/t/${tenant}/jobs?state=dead`);
  offered = await buttons(page, "#bulk");
  check(same(offered, ["Retry every dead job found"]), `a list of dead jobs offers Retry only: ${offered}`);
  await open(page, `#/t/${tenant}/jobs?state=available`);
  offered = await buttons(page, "#bulk");
  check(same(offered, ["Cancel every available job found"]), `a list of available jobs offers Cancel only: ${offered}`);

  // The search box takes GET /jobs's query, as stile jobs --where does.
  const customers = customer.split(",").toSorted();
  await open(page, `#/t/${tenant}/jobs`);
  await page.fill("input[name=where]", "args.customer.id=42");
  await page.click("form.filters button[type=submit]");
  await page.waitForFunction(() => document.getElementById("main").dataset.loaded.includes("where="), null, { timeout: 10000 });
  let found = (await listedIds(page)).toSorted();
  check(same(found, customers), `a search by args.customer.id=42 finds exactly customer 42's jobs: ${found} (want ${customers})`);
  check(await page.inputValue("input[name=where]") === "args.customer.id=42", "the search box keeps the search");
  await open(page, `#/t/${tenant}/jobs?where=${encodeURIComponent("args.customer.id=7&state=dead")}`);
  found = await listedIds(page);
  check(same(found, [other]), `a search by args.customer.id=7 finds only customer 7's job: ${found}`);
  await open(page, `#/t/${tenant}/jobs?where=colour%3Dred`);
  const refusedSearch = await page.textContent("#search-error");
  check(refusedSearch.includes("unknown query parameter") && await page.isVisible("input[name=where]"),
    `a search the API refuses says why and keeps the search box: ${refusedSearch}`);

  // An error with a 300-character URL wraps at a desktop's width and a phone's.
  const wide = async (p) => p.evaluate(() => [document.scrollingElement.scrollWidth, innerWidth]);
  await open(page, `#/t/${tenant}/jobs/${long}`);
  check((await page.textContent("#attempts")).includes("/status/last answered 502"), "the long error is in the timeline");
  let [sw, iw] = await wide(page);
  check(sw <= iw, `a long error scrolls nothing sideways at 1280 px (scrollWidth ${sw}, innerWidth ${iw})`);
  // Its error is from the attempt before the one that completed it.
  const title = await page.$eval("main", (m) => m.querySelector("#last-error-title")?.textContent);
  check(title === "Earlier attempt's error" && !(await page.$$eval("main h2", (hs) => hs.map((h) => h.textContent))).includes("Last error"),
    `a completed job marks its last_error as an earlier attempt's: ${title}`);
  await open(page, `#/t/${tenant}/jobs?state=completed`);
  const row = await page.textContent(`#jobs tr:has(a[href="#/t/${tenant}/jobs/${long}"]) td:last-child`);
  check(row.startsWith("earlier attempt: GET https://"), `the list marks it too: ${row}`);
  const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
  const p390 = await narrow.newPage();
  await p390.goto(base + "/console");
  await p390.evaluate((tok) => sessionStorage.setItem("stile-token", tok), token);
  await open(p390, `#/t/${tenant}/jobs/${long}`);
  [sw, iw] = await wide(p390);
  check(sw <= iw, `a long error scrolls nothing sideways at 390 px (scrollWidth ${sw}, innerWidth ${iw})`);
  await p390.screenshot({ path: join(shots, "phone-long-error.png"), fullPage: true });
  await narrow.close();

  // A job its rate key holds back (the module's: one start an hour).
  await open(page, `#/t/${tenant}/jobs/${rated}`);
  const summary = await page.textContent("#summary");
  check(summary.includes("rate key hourly"), `the job shows its rate key: ${summary}`);
  const held = await page.textContent("#waiting");
  check(held.includes('rate limited by key "hourly" (1 starts per 3600000 ms) until '), `the job says its rate key holds it back: ${held}`);
  await open(page, `#/t/${tenant}`);
  const rate = await page.textContent("#rates tbody tr");
  check(/^hourly1 per 1hthe module1\d{4}-\d\d-\d\d [\d:.]+ GMT\+5:3011$/.test(rate), `the overview lists the rate key, closed until a time: ${rate}`);

  if (waiting) {
    // Job 1 of the waiting tenant is of a kind no executor's claim names.
    // The kinds claims named are kept by the tenant's instance, and an
    // instance left idle while the browser started may have been evicted
    // (workerd does): claim again, as a running executor would.
    await api("POST", `/v1/t/${waiting}/claims`, { worker: "worker-d", kinds: ["test.echo"], limit: 1 });
    await open(page, `#/t/${waiting}`);
    const note = await page.textContent("#unhandled-other");
    check(note.includes("no executor handles test.other"), `the overview says which kind no executor handles: ${note}`);
    await open(page, `#/t/${waiting}/jobs/1`);
    const why = await page.textContent("#waiting");
    check(why.includes('no executor handles kind "test.other"'), `the job says why it waits: ${why}`);
    await page.screenshot({ path: join(shots, "waiting.png"), fullPage: true });
  }

  // What is failing across tenants, as the tenants told the directory
  // (a couple of seconds after their failures): the page polls.
  const fleetRow = `#failing tr:has(td:has-text("job test.fast dead"))`;
  await open(page, "#/failing");
  await page.waitForFunction(() => [...document.querySelectorAll("#failing tbody tr")].some((tr) =>
    tr.querySelector('td[data-label="What"]')?.textContent === "job test.fast dead" && tr.querySelector('td[data-label="Count"]')?.textContent === "5"),
  null, { timeout: 30000 });
  const group = await page.$$eval(`${fleetRow} td`, (tds) => Object.fromEntries(tds.map((td) => [td.dataset.label, td.textContent])));
  check(group.Error === "smtp.example.net answered # #.#.# for message #: try again later" &&
    group.Tenants === `${tenant}-acme (3), ${tenant}-globex (2)` && group.Newest.startsWith(`${tenant}-acme: job `),
    `the failing page groups the tenants' dead jobs by kind and error: ${JSON.stringify(group)}`);
  check(/GMT\+5:30$/.test(group.First) && /GMT\+5:30$/.test(group.Last), `with the first and last failure: ${group.First}, ${group.Last}`);
  await page.screenshot({ path: join(shots, "failing.png"), fullPage: true });
  await page.click(`${fleetRow} a[href="#/t/${tenant}-acme/jobs?state=dead&kind=test.fast"]`);
  await page.waitForFunction(() => document.querySelectorAll("#jobs tbody tr").length === 3, null, { timeout: 10000 });
  check(true, "a tenant of the group links to its dead jobs of the kind");
  // Live: a job's page follows the job from the tenant's WebSocket, with
  // no reload and no polling (not while the socket is open): its claim,
  // the progress its handler publishes, its end.
  {
    const lj = await api("POST", `/v1/t/${tenant}/jobs`, { kind: "test.fast", args: { live: true }, lease_ms: 60000 });
    await open(page, `#/t/${tenant}/jobs/${lj.id}`);
    await page.waitForFunction(() => document.body.dataset.live === "open", null, { timeout: 10000 });
    check(true, "the job page opened the tenant's live updates");
    const live = (what) => page.waitForFunction((w) => {
      const m = document.getElementById("main");
      return m.dataset.updatedBy === "live" && m.textContent.includes(w);
    }, what, { timeout: 10000 });
    const claimed = await api("POST", `/v1/t/${tenant}/claims`, { worker: "worker-live", kinds: ["test.fast"], limit: 1 });
    check(claimed.jobs?.[0]?.id === lj.id, `the live job is claimed: ${JSON.stringify(claimed.jobs)}`);
    const c = claimed.jobs[0];
    const claim = { worker: "worker-live", attempt: c.attempt, lease_token: c.lease_token };
    await live("worker-live");
    check(true, "the claim shows without a reload, from the socket");
    await api("POST", `/v1/t/${tenant}/jobs/${lj.id}/heartbeat`, { ...claim, progress: { done: 3, of: 5 } });
    await live('{"done":3,"of":5}');
    check(true, "the progress the handler published shows without a reload");
    await api("POST", `/v1/t/${tenant}/jobs/${lj.id}/report`, { ...claim, outcome: "completed", output: { live: "done" } });
    await page.waitForFunction(() => document.getElementById("main").dataset.updatedBy === "live" &&
      document.getElementById("summary")?.textContent.startsWith("completed"), null, { timeout: 10000 });
    check(true, "the job's end shows without a reload, from the socket");
  }

  if (mode === "full") {
    // Fixed in one action: the directory gives the retry to every tenant.
    await open(page, "#/failing");
    await page.click(`${fleetRow} >> text=Retry in every tenant`);
    await page.waitForSelector("#fleet-operation", { timeout: 10000 });
    await page.waitForFunction(() => document.getElementById("fleet-operation").dataset.state === "done", null, { timeout: 30000 });
    const fleetDone = await page.textContent("#fleet-operation");
    check(fleetDone.startsWith("Retry of state=dead&kind=test.fast in every tenant: ") && fleetDone.includes("found 5 · done 5 · skipped 0") &&
      fleetDone.endsWith("finished"), `the retry across tenants reaches done with its counts: ${fleetDone}`);
    const stillDead = await api("GET", `/v1/t/${tenant}-acme/jobs?state=dead`);
    const ready = await api("GET", `/v1/t/${tenant}-globex/jobs?state=available&queue=mail`);
    check(stillDead.jobs.length === 0 && ready.jobs.length === 2,
      `the tenants' dead jobs run again: ${stillDead.jobs.length} dead, ${ready.jobs.length} available`);

    // From the list to the timeline.
    await open(page, `#/t/${tenant}/jobs?state=completed`);
    await page.click(`#jobs a[href="#/t/${tenant}/jobs/${twice}"]`);
    await page.waitForSelector("#why");
    check(true, "a job of the list links to its timeline");
    await page.screenshot({ path: join(shots, "jobs.png"), fullPage: true });

    // Retry a dead job: it becomes available without a reload.
    await open(page, `#/t/${tenant}/jobs/${dead}`);
    check((await page.textContent("main")).includes("dead"), "the dead job shows as dead");
    await page.click("text=Retry");
    await page.waitForFunction(() => document.getElementById("main").textContent.includes("available"), null, { timeout: 10000 });
    check(true, "the retried job shows as available without reloading");
    // Its next attempt, 2, has the fresh budget of one failure that Retry gives.
    const again = await api("POST", `/v1/t/${tenant}/claims`, { worker: "worker-g", kinds: ["test.echo"], limit: 1 });
    check(again.jobs?.[0]?.id === dead && again.jobs[0].attempt === 2, `the retried job is claimed again: ${JSON.stringify(again.jobs)}`);
    await page.waitForFunction(() => document.getElementById("summary")?.textContent.startsWith("running"), null, { timeout: 10000 });
    const retried = await page.textContent("#summary");
    check(retried.includes("attempt 2 · failures 0 of 1 ·"), `the retried job counts its failures against its budget: ${retried}`);
    offered = await buttons(page, "#actions");
    check(same(offered, ["Cancel"]), `a running job offers Cancel only: ${offered}`);
    await open(page, `#/t/${tenant}/jobs?state=running`);
    const listed = await page.$$eval(`#jobs tr:has(a[href="#/t/${tenant}/jobs/${dead}"]) td`,
      (tds) => Object.fromEntries(tds.map((td) => [td.dataset.label, td.textContent])));
    check(listed.Attempt === "2" && listed.Failures === "0 of 1", `the list shows attempt 2 and no failure of 1: ${JSON.stringify(listed)}`);

    // Retry by the search: the tenant runs it, and the page follows its
    // progress to the end, then lists the jobs again.
    const search = `#/t/${tenant}/jobs?state=dead&where=${encodeURIComponent("args.customer.id=42")}`;
    await open(page, search);
    found = (await listedIds(page)).toSorted();
    check(same(found, customers), `the dead jobs of customer 42 are listed: ${found}`);
    await page.click("#bulk >> text=Retry every dead job found");
    await page.waitForSelector("#operation", { timeout: 10000 });
    await page.waitForFunction(() => document.getElementById("operation").dataset.state === "done", null, { timeout: 20000 });
    const progress = await page.textContent("#operation");
    check(progress.startsWith("Retry by args.customer.id=42&state=dead: found 3 · done 3 · skipped 0 · finished"),
      `the operation's progress reaches done with its counts: ${progress}`);
    await page.waitForFunction(() => document.querySelectorAll("#jobs tbody tr").length === 0, null, { timeout: 10000 });
    check(true, "the list after it finds no dead job of customer 42");
    for (const id of customers) {
      const j = await api("GET", `/v1/t/${tenant}/jobs/${id}`);
      check(j.state === "available", `job ${id} of customer 42 is available in the API: ${j.state}`);
    }
    const left = await api("GET", `/v1/t/${tenant}/jobs/${other}`);
    check(left.state === "dead", `customer 7's job, which the search does not find, is still dead: ${left.state}`);
    const ops = (await api("GET", `/v1/t/${tenant}/operations`)).operations;
    check(ops[0]?.action === "retry" && ops[0].filter === "args.customer.id=42&state=dead" && ops[0].done === 3 && ops[0].state === "done",
      `the API has the operation: ${JSON.stringify(ops[0])}`);
    await page.screenshot({ path: join(shots, "bulk.png"), fullPage: true });

    // Pause a queue.
    await open(page, `#/t/${tenant}`);
    await page.click("#queues >> text=Pause");
    await page.waitForFunction(() => document.getElementById("queues").textContent.includes("paused"), null, { timeout: 10000 });
    check((await api("GET", `/v1/t/${tenant}/queues`)).paused?.includes("default"), "the queue is paused in the API");
    await page.click("#queues >> text=Resume");

    // Rebuild a projection.
    await open(page, `#/t/${tenant}/projections`);
    await page.click("#projections >> text=Rebuild");
    await page.waitForFunction(() => document.getElementById("projections").textContent.includes("rebuild"), null, { timeout: 10000 })
      .catch(() => {}); // a small log is rebuilt and swapped in at once
    const ps = await api("GET", `/v1/t/${tenant}/projections`);
    check(ps.projections.some((p) => p.live.generation > 1 || p.rebuild), "the projection was rebuilt");

    // Replay a policy from the reactions page: what it handled is
    // delivered again, in order, and the page follows the operation.
    const policy = (await api("GET", `/v1/t/${tenant}/reactions`)).reactions.find((r) => r.kind === "policy" && r.lag > 0);
    check(policy, "a policy has events to handle");
    const handed = (await api("POST", `/v1/t/${tenant}/reactions/claims`, { worker: "console-w", handlers: [policy.name], limit: 10 })).deliveries;
    check(handed.length > 1, `the policy is handed its events: ${handed.length}`);
    for (const d of handed) {
      const r = await api("POST", `/v1/t/${tenant}/reactions/settle`, { settlements: [{ handler: d.handler, seq: d.event.seq, claim_id: d.claim_id, outcome: "succeeded" }] });
      check(r.results[0].state === "succeeded", `delivery ${d.event.seq} settles: ${JSON.stringify(r.results[0])}`);
    }
    await open(page, `#/t/${tenant}/reactions`);
    const from = handed[1].event.seq;
    await page.fill(`#replay-${policy.name} input[name=from_seq]`, String(from));
    await page.click(`#replay-${policy.name} >> text=Replay from`);
    await page.waitForSelector("#operation", { timeout: 10000 });
    await page.waitForFunction(() => document.getElementById("operation").dataset.state === "done", null, { timeout: 20000 });
    const replayed = await page.textContent("#operation");
    const n = handed.length - 1;
    check(replayed.startsWith(`Replay of ${policy.name} from event ${from} to ${handed.at(-1).event.seq}: found ${n} · delivered again ${n} · still open 0 · finished`),
      `the replay's progress reaches done with its counts: ${replayed}`);
    const redelivered = (await api("POST", `/v1/t/${tenant}/reactions/claims`, { worker: "console-w", handlers: [policy.name], limit: 10 })).deliveries;
    check(same(redelivered.map((d) => d.event.seq), handed.slice(1).map((d) => d.event.seq)) && redelivered.every((d) => d.replay === 1),
      `the policy is handed the replayed events again, in order: ${redelivered.map((d) => `${d.event.seq}/${d.replay}`)}`);
    await page.screenshot({ path: join(shots, "replay.png"), fullPage: true });

    for (const [hash, what] of [[`#/t/${tenant}/reactions`, "reactions"], [`#/t/${tenant}/events`, "events"]]) {
      await open(page, hash);
      check((await page.textContent("main")).length > 20, `the ${what} page shows data`);
    }
    await page.screenshot({ path: join(shots, "projections.png"), fullPage: true });

    // A phone.
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const p2 = await phone.newPage();
    await p2.goto(base + "/console");
    await p2.fill("input[name=token]", token);
    await p2.click("form.signin button");
    await p2.waitForSelector("#tenants");
    for (const hash of ["#/", "#/failing", `#/t/${tenant}`, `#/t/${tenant}/jobs`, `#/t/${tenant}/jobs/${twice}`, `#/t/${tenant}/reactions`,
      `#/t/${tenant}/projections`, `#/t/${tenant}/events`]) {
      await open(p2, hash);
      await noHorizontalScroll(p2, hash);
    }
    await open(p2, `#/t/${tenant}/jobs/${twice}`);
    await p2.screenshot({ path: join(shots, "phone-job.png"), fullPage: true });
  }
  check(refused.length === 0, `nothing the console loaded was refused: ${refused.join(", ")}`);
  console.log(JSON.stringify({ ok: true, results }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: String(e?.message ?? e), results }));
  process.exitCode = 1;
} finally {
  await browser.close();
}
