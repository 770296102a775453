// A small client of Stile's API for JavaScript callers: a Worker with a
// service binding to the Stile Worker (env.STILE), or anything with fetch.
// `stile build` writes it into the bundle's directory as client.mjs; copy
// it into your Worker. docs/DEPLOY.md, "Calling Stile from your Worker",
// has a complete wrangler config and example.
//
//   import { Stile } from "./client.mjs";
//   const stile = new Stile(env.STILE, env.STILE_TOKEN);
//   const job = await stile.tenant("acme").enqueue({ kind: "email.send", args: { to } });

/**
 * @typedef {{ fetch(input: Request | string, init?: RequestInit): Promise<Response> }} Fetcher
 *   A service binding (env.STILE) or globalThis.
 * @typedef {{ kind: string, args?: unknown, queue?: string, priority?: number, max_attempts?: number,
 *   run_at?: string, unique_key?: string, tags?: string[], depends_on?: string[] }} EnqueueRequest
 * @typedef {{ id: string, kind: string, state: string, attempt: number, output?: unknown,
 *   last_error?: string } & Record<string, unknown>} Job
 * @typedef {{ id: string, aggregate: string, aggregate_id: string, type: string, data?: unknown,
 *   expected_version?: number }} Command
 */

/** A refusal of the API: its HTTP status, its code (docs/API.md) and message. */
export class StileError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.name = "StileError";
    this.status = status;
    this.code = code;
  }
}

export class Stile {
  /**
   * @param {Fetcher} fetcher env.STILE (a service binding), or globalThis
   * @param {string} token the deployment's token (every call carries it,
   *   bindings included: the Stile Worker checks it)
   * @param {string} [base] the Stile Worker's URL; any for a binding
   */
  constructor(fetcher, token, base = "https://stile") {
    if (!fetcher?.fetch) throw new TypeError("Stile: pass a service binding (env.STILE) or globalThis");
    if (!token) throw new TypeError("Stile: pass the deployment's token");
    this.fetcher = fetcher;
    this.token = token;
    this.base = base.replace(/\/$/, "");
  }

  /** @param {string} name a tenant name */
  tenant(name) {
    return new Tenant(this, name);
  }

  /**
   * @param {string} method @param {string} path under /v1/t/
   * @param {unknown} [body] @returns {Promise<any>}
   */
  async request(method, path, body) {
    const res = await this.fetcher.fetch(`${this.base}/v1/t/${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let data;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch {
      throw new StileError(res.status, "invalid_response", text.slice(0, 200));
    }
    if (!res.ok) throw new StileError(res.status, data?.code ?? "unknown", data?.message ?? text);
    return data;
  }
}

export class Tenant {
  /** @param {Stile} stile @param {string} name */
  constructor(stile, name) {
    this.stile = stile;
    this.name = encodeURIComponent(name);
  }

  /** @param {EnqueueRequest} req @returns {Promise<Job>} */
  enqueue(req) {
    return this.stile.request("POST", `${this.name}/jobs`, req);
  }

  /** @param {EnqueueRequest[]} reqs @returns {Promise<{jobs: Job[]}>} */
  enqueueMany(reqs) {
    return this.stile.request("POST", `${this.name}/jobs/batch`, { jobs: reqs });
  }

  /** @param {string} id @returns {Promise<Job>} */
  job(id) {
    return this.stile.request("GET", `${this.name}/jobs/${encodeURIComponent(id)}`);
  }

  /** @param {Command} c @returns {Promise<{id: string, stream: string, version: number, events: unknown[]}>} */
  command(c) {
    return this.stile.request("POST", `${this.name}/commands`, c);
  }

  /** @param {string} name @param {Record<string, string>} [params] */
  query(name, params = {}) {
    const q = new URLSearchParams(params).toString();
    return this.stile.request("GET", `${this.name}/queries/${encodeURIComponent(name)}${q ? "?" + q : ""}`);
  }
}
