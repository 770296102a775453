// The host ABI of a Stile tenant module, implemented over a Durable
// Object's SQLite storage. Package do (Go) defines it; this file is its JS
// twin and is kept in step by shared test vectors (do/testdata) and by the
// conformance suite that runs the real module in workerd.
//
// Pure ES module: no imports, so Node can load it in tests.

export const FRAME_VERSION = 2;
export const KIND_API = 1;
export const KIND_ALARM = 2;
export const FLAG_WAKE = 1, FLAG_FINISHED = 2, FLAG_HOLD_FINISHED = 4;
const TX_COMMIT = 0;

const TAG_NULL = 0, TAG_INT = 1, TAG_FLOAT = 2, TAG_TEXT = 3, TAG_BLOB = 4;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

// ---- a growable byte writer ----

class Writer {
  constructor(size = 256) {
    this.buf = new Uint8Array(size);
    this.len = 0;
  }
  room(n) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
  byte(b) {
    this.room(1);
    this.buf[this.len++] = b;
  }
  bytes(b) {
    this.room(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  uvarint(n) {
    // n is a non-negative integer Number (< 2^53) or BigInt.
    if (typeof n === "bigint") {
      while (n >= 0x80n) {
        this.byte(Number(n & 0x7fn) | 0x80);
        n >>= 7n;
      }
      this.byte(Number(n));
      return;
    }
    while (n >= 0x80) {
      this.byte((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    this.byte(n);
  }
  varint(n) {
    // zigzag. Numbers below 2^52 in magnitude zigzag exactly as Numbers;
    // beyond that (up to 2^53 - 1) through BigInt.
    if (Math.abs(n) < 2 ** 52) {
      this.uvarint(n >= 0 ? n * 2 : -n * 2 - 1);
      return;
    }
    const b = BigInt(n);
    this.uvarint(b >= 0n ? b << 1n : ((-b) << 1n) - 1n);
  }
  result() {
    return this.buf.subarray(0, this.len);
  }
}

class Reader {
  constructor(buf) {
    this.buf = buf;
    this.off = 0;
  }
  byte() {
    if (this.off >= this.buf.length) throw new Error("value codec: truncated");
    return this.buf[this.off++];
  }
  // uvarint returns a Number when the value fits in 49 bits (seven bytes,
  // every length and almost every integer), else a BigInt.
  uvarint() {
    let n = 0, mul = 1;
    for (let i = 0; i < 7; i++) {
      const b = this.byte();
      n += (b & 0x7f) * mul;
      if (b < 0x80) return n;
      mul *= 128;
    }
    let big = BigInt(n), shift = 49n;
    for (;;) {
      const b = this.byte();
      big |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return big;
      shift += 7n;
      if (shift > 63n) throw new Error("value codec: bad uvarint");
    }
  }
  varint() {
    const u = this.uvarint();
    if (typeof u === "number") return u % 2 === 1 ? -(u + 1) / 2 : u / 2;
    return u & 1n ? -((u + 1n) >> 1n) : u >> 1n;
  }
  bytes(n) {
    if (this.off + n > this.buf.length) throw new Error("value codec: overrun");
    const b = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return b;
  }
}

// ---- values ----

// decodeParams turns an encoded parameter list into values for sql.exec.
export function decodeParams(buf) {
  const r = new Reader(buf);
  const n = Number(r.uvarint());
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const tag = r.byte();
    switch (tag) {
      case TAG_NULL: out[i] = null; break;
      case TAG_INT: {
        const v = r.varint();
        if (typeof v === "bigint" && (v > BigInt(MAX_SAFE) || v < -BigInt(MAX_SAFE))) {
          throw new Error(`value codec: integer ${v} is outside ±(2^53-1)`);
        }
        out[i] = Number(v);
        break;
      }
      case TAG_FLOAT: {
        const b = r.bytes(8);
        out[i] = new DataView(b.buffer, b.byteOffset, 8).getFloat64(0, true);
        break;
      }
      case TAG_TEXT: out[i] = fromUtf8.decode(r.bytes(Number(r.uvarint()))); break;
      case TAG_BLOB: out[i] = r.bytes(Number(r.uvarint())).slice(); break;
      default: throw new Error(`value codec: unknown tag ${tag}`);
    }
  }
  return out;
}

function encodeValue(w, v) {
  if (v === null || v === undefined) {
    w.byte(TAG_NULL);
  } else if (typeof v === "number") {
    if (Number.isInteger(v) && Math.abs(v) <= MAX_SAFE && !Object.is(v, -0)) {
      w.byte(TAG_INT);
      w.varint(v);
    } else {
      w.byte(TAG_FLOAT);
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, v, true);
      w.bytes(b);
    }
  } else if (typeof v === "string") {
    const b = utf8.encode(v);
    w.byte(TAG_TEXT);
    w.uvarint(b.length);
    w.bytes(b);
  } else if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) {
    const b = v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    w.byte(TAG_BLOB);
    w.uvarint(b.length);
    w.bytes(b);
  } else {
    throw new Error(`value codec: cannot encode ${typeof v}`);
  }
}

// encodeRows encodes rows (arrays of values) of ncols columns.
export function encodeRows(ncols, rows) {
  const w = new Writer();
  w.uvarint(ncols);
  w.uvarint(rows.length);
  for (const row of rows) for (let i = 0; i < ncols; i++) encodeValue(w, row[i]);
  return w.result();
}

// encodeParams is the guest's side of the codec; JS uses it in tests only.
export function encodeParams(values) {
  const w = new Writer();
  w.uvarint(values.length);
  for (const v of values) encodeValue(w, v);
  return w.result();
}

// ---- headers (do/header.go) ----

export const HEADER_TRACEPARENT = "traceparent";
export const HEADER_ALLOW = "allow";
export const HEADER_PRINCIPAL = "stile-principal";
export const HEADER_ROUTE = "stile-route";
export const RESERVED_PREFIX = "stile-";
export const MAX_HEADERS = 16, MAX_HEADER_NAME = 64, MAX_HEADER_VALUE = 1024;

const headerName = /^[a-z0-9-]{1,64}$/;
const headerValue = /^[\t\x20-\x7e]*$/;

// checkHeader throws on a header a frame may not carry, in do's words.
export function checkHeader(name, value) {
  let problem = "";
  if (!headerName.test(name)) problem = `the name is not lower-case ASCII [a-z0-9-] of 1 to ${MAX_HEADER_NAME} bytes`;
  else if (value.length > MAX_HEADER_VALUE) problem = `a value of ${value.length} bytes is over ${MAX_HEADER_VALUE}`;
  else if (!headerValue.test(value)) problem = "a control or non-ASCII byte in the value";
  if (problem) throw new Error(`value codec: header ${JSON.stringify(name)}: ${problem}`);
}

// ---- held claims (do/hold.go) ----

export const HEADER_HELD = "stile-held", HEADER_HOLD = "stile-hold", HEADER_WOKE = "stile-woke";

// parseHold is do.ParseHold: null for an absent or unreadable stile-hold
// or stile-woke header (which matches everything).
export function parseHold(v) {
  if (!v) return null;
  try {
    const h = JSON.parse(v);
    return h !== null && typeof h === "object" && !Array.isArray(h) ? h : null;
  } catch {
    return null;
  }
}

// holdMatches is do.Hold.Matches: whether work w made ready (a parsed
// stile-woke) may satisfy the claim held as h (a parsed stile-hold).
export function holdMatches(h, w) {
  if (h.reactions && w.reactions) return true;
  const hq = h.queues ?? [], wq = w.queues ?? [], hk = h.kinds ?? [], wk = w.kinds ?? [];
  if (hq.length === 0 || wq.length === 0) return false;
  if (!hq.includes("*") && !hq.some((q) => wq.includes(q))) return false;
  return hk.length === 0 || wk.length === 0 || hk.some((k) => wk.includes(k));
}

// changeFor is api.Change.For: the part of a change (a parsed
// stile-changes) a watch with filter f receives, or null for none.
export function changeFor(c, f) {
  if (!f.job && !f.kind) return c.jobs?.length || c.reactions?.length || c.projections?.length || c.more ? c : null;
  const jobs = (c.jobs ?? []).filter((j) => (!f.job || j.id === f.job) && (!f.kind || j.kind === f.kind));
  if (jobs.length === 0 && !c.more) return null;
  const out = {};
  if (jobs.length) out.jobs = jobs;
  if (c.more) out.more = true;
  return out;
}

const traceparent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

// validTraceparent is do.ValidTraceparent: a W3C version-00 traceparent in
// lower case whose trace id and parent id are not all zeros.
export function validTraceparent(s) {
  const m = traceparent.exec(s ?? "");
  return m !== null && !/^0+$/.test(m[1]) && !/^0+$/.test(m[2]);
}

// ---- frames ----

// encodeRequest writes a request frame; headers are [name, value] pairs
// (checked: a transport that built a bad one gets an error, not a frame).
export function encodeRequest(kind, method, path, query, body, headers = []) {
  if (headers.length > MAX_HEADERS) throw new Error(`value codec: ${headers.length} headers exceed ${MAX_HEADERS}`);
  const w = new Writer(64 + body.length);
  w.byte(FRAME_VERSION);
  w.byte(kind);
  for (const s of [method, path, query]) {
    const b = utf8.encode(s);
    w.uvarint(b.length);
    w.bytes(b);
  }
  w.uvarint(headers.length);
  for (const [name, value] of headers) {
    checkHeader(name, value);
    for (const s of [name, value]) {
      w.uvarint(s.length); // ASCII: one byte per character
      for (let i = 0; i < s.length; i++) w.byte(s.charCodeAt(i));
    }
  }
  w.uvarint(body.length);
  w.bytes(body);
  return w.result();
}

export function decodeResponse(buf) {
  const r = new Reader(buf);
  if (r.byte() !== FRAME_VERSION) throw new Error(`value codec: not a version ${FRAME_VERSION} response frame`);
  const status = Number(r.uvarint());
  const flags = r.byte();
  const alarmAt = Number(r.varint());
  const holdMs = Number(r.uvarint());
  const n = Number(r.uvarint());
  if (n > MAX_HEADERS) throw new Error(`value codec: ${n} headers exceed ${MAX_HEADERS}`);
  const headers = new Array(n);
  for (let i = 0; i < n; i++) {
    const name = fromLatin1(r.bytes(Number(r.uvarint())));
    const value = fromLatin1(r.bytes(Number(r.uvarint())));
    checkHeader(name, value);
    headers[i] = [name, value];
  }
  const body = r.bytes(Number(r.uvarint()));
  if (r.off !== buf.length) throw new Error("value codec: trailing bytes after response frame");
  return { status, flags, alarmAt, holdMs, headers, body };
}

// fromLatin1 maps each byte to one character, so that a non-ASCII byte is
// seen (and refused) as such rather than decoded as UTF-8.
function fromLatin1(b) {
  let s = "";
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
  return s;
}

// ---- the module ----

// TxRollback is thrown inside transactionSync to roll a transaction back.
class TxRollback extends Error {}

// WASI: what a Go reactor needs, over nothing but the clock, randomness and
// the console. ENOSYS for the rest.
const ERRNO_SUCCESS = 0, ERRNO_BADF = 8, ERRNO_NOSYS = 52;

export const WASI_IMPLEMENTED = [
  "args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_time_get",
  "random_get", "fd_write", "poll_oneoff", "proc_exit", "sched_yield", "fd_prestat_get",
];
export const WASI_NOSYS = ["fd_close", "fd_read", "fd_fdstat_get", "fd_fdstat_set_flags", "fd_prestat_dir_name"];
export const STILE_IMPORTS = ["sql", "take", "tx", "now", "log"];

// instantiate starts a tenant module over storage (a Durable Object's
// ctx.storage) and returns { handle(frame) -> Uint8Array }. A trap throws
// out of handle; the caller must discard the instance.
export function instantiate(wasmModule, storage, opts = {}) {
  const log = opts.log ?? ((level, msg) => console.log(msg));
  const now = opts.now ?? (() => Date.now());
  let instance, memory, pending = null;
  // depth counts the open transactions; commits the outermost ones that
  // committed, so that a trap after a commit, outside any transaction, is
  // not reported as writing nothing (TrapError.committed); inTx says the
  // trap came inside one, which it rolled back.
  let depth = 0, commits = 0, inTx = false;
  // rows counts the rows the storage cursors of the current call read and
  // wrote (index entries included): what Cloudflare bills the call for.
  let rows = { read: 0, written: 0 };
  const mem = () => new Uint8Array(memory.buffer);
  const view = () => new DataView(memory.buffer);

  // A payload goes into the guest's buffer when it fits, else waits for take.
  function payload(bytes, outPtr, outCap, isErr) {
    if (bytes.length <= outCap) {
      mem().set(bytes, outPtr);
      pending = null;
    } else {
      pending = bytes.slice();
    }
    return BigInt(isErr ? -bytes.length - 1 : bytes.length);
  }

  const stile = {
    sql(sqlPtr, sqlLen, argsPtr, argsLen, outPtr, outCap) {
      const sql = fromUtf8.decode(mem().subarray(sqlPtr, sqlPtr + sqlLen));
      let out, isErr = false;
      try {
        const params = decodeParams(mem().slice(argsPtr, argsPtr + argsLen));
        if (opts.fault) opts.fault(sql);
        const cursor = storage.sql.exec(sql, ...params);
        // Read every row: an unfinished cursor fails the request in workerd.
        const got = cursor.raw().toArray();
        rows.read += cursor.rowsRead;
        rows.written += cursor.rowsWritten;
        out = encodeRows(cursor.columnNames.length, got);
      } catch (e) {
        if (e instanceof WebAssembly.RuntimeError) throw e;
        out = utf8.encode(String(e?.message ?? e));
        isErr = true;
      }
      return payload(out, outPtr, outCap, isErr);
    },
    take(ptr) {
      mem().set(pending ?? new Uint8Array(0), ptr);
      pending = null;
    },
    tx(id) {
      let trapped = null;
      try {
        depth++;
        storage.transactionSync(() => {
          let rc;
          try {
            rc = instance.exports.stile_tx_body(id);
          } catch (e) {
            trapped = e;
            inTx = true;
            throw e;
          }
          if (rc !== TX_COMMIT) throw new TxRollback();
        });
        if (depth === 1) commits++;
        return 0n;
      } catch (e) {
        // A trap in the body unwinds everything: never return into the
        // module. transactionSync has rolled back.
        if (trapped) throw trapped;
        if (e instanceof TxRollback) return 1n;
        const msg = utf8.encode(String(e?.message ?? e));
        pending = msg;
        return BigInt(-msg.length - 1);
      } finally {
        depth--;
      }
    },
    now() {
      return BigInt(now());
    },
    log(level, ptr, len) {
      log(level, fromUtf8.decode(mem().subarray(ptr, ptr + len)));
    },
  };

  let line = "";
  const wasi = {
    args_get: () => ERRNO_SUCCESS,
    args_sizes_get(argc, bufSize) {
      view().setUint32(argc, 0, true);
      view().setUint32(bufSize, 0, true);
      return ERRNO_SUCCESS;
    },
    environ_get: () => ERRNO_SUCCESS,
    environ_sizes_get(count, bufSize) {
      view().setUint32(count, 0, true);
      view().setUint32(bufSize, 0, true);
      return ERRNO_SUCCESS;
    },
    clock_time_get(id, precision, out) {
      view().setBigUint64(out, BigInt(now()) * 1000000n, true);
      return ERRNO_SUCCESS;
    },
    random_get(ptr, len) {
      for (let off = 0; off < len; off += 65536) {
        crypto.getRandomValues(mem().subarray(ptr + off, ptr + Math.min(len, off + 65536)));
      }
      return ERRNO_SUCCESS;
    },
    fd_write(fd, iovs, iovsLen, nwritten) {
      const dv = view();
      let n = 0;
      for (let i = 0; i < iovsLen; i++) {
        const p = dv.getUint32(iovs + i * 8, true), l = dv.getUint32(iovs + i * 8 + 4, true);
        line += fromUtf8.decode(mem().subarray(p, p + l));
        n += l;
      }
      let nl;
      while ((nl = line.indexOf("\n")) >= 0) {
        log(fd === 2 ? 2 : 1, line.slice(0, nl));
        line = line.slice(nl + 1);
      }
      dv.setUint32(nwritten, n, true);
      return ERRNO_SUCCESS;
    },
    // Clock subscriptions complete at once: the guest never waits.
    poll_oneoff(inPtr, outPtr, nsubs, nevents) {
      const dv = view();
      for (let i = 0; i < nsubs; i++) {
        const sub = inPtr + i * 48, ev = outPtr + i * 32;
        dv.setBigUint64(ev, dv.getBigUint64(sub, true), true); // userdata
        dv.setUint16(ev + 8, 0, true); // errno
        dv.setUint8(ev + 10, dv.getUint8(sub + 8)); // type
      }
      dv.setUint32(nevents, nsubs, true);
      return ERRNO_SUCCESS;
    },
    proc_exit(code) {
      throw new WebAssembly.RuntimeError(`tenant module exited with code ${code}`);
    },
    sched_yield: () => ERRNO_SUCCESS,
    fd_prestat_get: () => ERRNO_BADF, // no preopened directories (ENOSYS would panic _initialize)
  };
  for (const name of WASI_NOSYS) wasi[name] = () => ERRNO_NOSYS;

  instance = new WebAssembly.Instance(wasmModule, { wasi_snapshot_preview1: wasi, stile });
  memory = instance.exports.memory;
  instance.exports._initialize();

  return {
    // rows are the rows the last call of handle read and wrote.
    get rows() {
      return rows;
    },
    handle(frame) {
      const before = commits;
      inTx = false;
      rows = { read: 0, written: 0 };
      try {
        const ptr = instance.exports.stile_buffer(frame.length) >>> 0;
        mem().set(frame, ptr);
        const res = instance.exports.stile_handle(frame.length);
        const rptr = Number(BigInt.asUintN(64, res) >> 32n), rlen = Number(res & 0xffffffffn);
        return mem().slice(rptr, rptr + rlen);
      } catch (e) {
        throw new TrapError(e, !inTx && commits !== before);
      }
    },
  };
}

// TrapError is a trap out of handle; committed says a transaction of the
// call had committed before it: what the request wrote stands.
export class TrapError extends Error {
  constructor(cause, committed) {
    super(String(cause?.message ?? cause));
    this.cause = cause;
    this.committed = committed;
  }
}

// importNames lists what instantiate provides, per module, for the test
// that refuses a module importing anything else.
export function importNames() {
  return {
    wasi_snapshot_preview1: [...WASI_IMPLEMENTED, ...WASI_NOSYS].sort(),
    stile: [...STILE_IMPORTS].sort(),
  };
}
