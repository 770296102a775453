// Tests of abi.mjs under Node's test runner: the codec against the vectors
// the Go codec writes (do/testdata/vectors.json). Run by host/workerd's Go tests:
//   node --test host/workerd/js/abi_test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { changeFor, decodeParams, decodeResponse, encodeParams, encodeRequest, encodeRows, holdMatches, importNames, parseHold, validTraceparent } from "./abi.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const vectors = JSON.parse(readFileSync(here + "../../../do/testdata/vectors.json", "utf8"));
const hex = (b) => Buffer.from(b).toString("hex");
const bytes = (h) => new Uint8Array(Buffer.from(h, "hex"));

// jsValue is what sql.exec receives or returns for a vector value.
function jsValue(v) {
  if (v.int !== undefined) return Number(v.int);
  if (v.float !== undefined) return v.float;
  if (v.text !== undefined) return v.text;
  if (v.blob !== undefined) return bytes(v.blob);
  return null;
}

test("decodeParams reads what the Go guest encodes", () => {
  for (const p of vectors.params) {
    assert.deepEqual(decodeParams(bytes(p.hex)), p.values.map(jsValue));
  }
});

test("encodeParams writes what the Go guest writes", () => {
  for (const p of vectors.params) {
    // JS cannot tell 2.0 from 2; the vectors use no integral floats.
    assert.equal(hex(encodeParams(p.values.map(jsValue))), p.hex);
  }
});

test("encodeRows writes what the Go guest reads", () => {
  for (const r of vectors.rows) {
    assert.equal(hex(encodeRows(r.columns, r.rows.map((row) => row.map(jsValue)))), r.hex);
  }
});

test("request frames match", () => {
  for (const r of vectors.requests) {
    const got = encodeRequest(r.kind, r.method, r.path, r.query, new TextEncoder().encode(r.body), r.headers);
    assert.equal(hex(got), r.hex);
  }
});

test("request frames beyond the header rules are refused", () => {
  for (const r of vectors.refused_requests) {
    assert.throws(() => encodeRequest(r.kind, r.method, r.path, r.query, new TextEncoder().encode(r.body), r.headers),
      (e) => e.message.startsWith("value codec: ") && e.message.includes(r.error), r.error);
  }
});

test("response frames beyond the header rules are refused", () => {
  for (const r of vectors.refused_responses) {
    assert.throws(() => decodeResponse(bytes(r.hex)),
      (e) => e.message.startsWith("value codec: ") && e.message.includes(r.error), r.error);
  }
});

test("traceparent checks match", () => {
  for (const t of vectors.traceparents) assert.equal(validTraceparent(t.value), t.valid, t.value);
});

test("response frames match", () => {
  for (const r of vectors.responses) {
    const got = decodeResponse(bytes(r.hex));
    assert.equal(got.status, r.status);
    assert.equal(got.flags, r.flags);
    assert.equal(got.alarmAt, r.alarm_at);
    assert.equal(got.holdMs, r.hold_ms);
    assert.deepEqual(got.headers, r.headers);
    assert.equal(new TextDecoder().decode(got.body), r.body);
  }
});

test("integers beyond 2^53 are refused, not rounded", () => {
  // tag 1, zigzag varint of 2^53 (2^54): 0x80 x7, 0x40
  const tooBig = new Uint8Array([1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]);
  assert.throws(() => decodeParams(tooBig), /outside/);
});

test("importNames lists what instantiate provides", () => {
  const names = importNames();
  assert.ok(names.stile.includes("sql") && names.stile.includes("tx"));
  assert.ok(names.wasi_snapshot_preview1.includes("fd_write"));
});

test("changeFor gives a watch what api.Change.For gives it", () => {
  const vectors = JSON.parse(readFileSync(here + "../../../api/testdata/watch.json", "utf8"));
  assert.ok(vectors.length > 0);
  for (const v of vectors) {
    assert.deepEqual(changeFor(v.change, v.filter), v.want, `${JSON.stringify(v.change)} for ${JSON.stringify(v.filter)}`);
  }
});

test("holdMatches wakes a held claim as do.Hold.Matches does", () => {
  const vectors = JSON.parse(readFileSync(here + "../../../do/testdata/holds.json", "utf8"));
  assert.ok(vectors.length > 0);
  for (const v of vectors) {
    const hold = parseHold(v.hold), woke = parseHold(v.woke);
    const got = !woke || !hold || holdMatches(hold, woke);
    assert.equal(got, v.wakes, `hold ${v.hold}, woke ${v.woke}`);
  }
});
