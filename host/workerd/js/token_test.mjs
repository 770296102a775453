// The Worker's token verification against the vectors the Go host checks
// (token/testdata/vectors.json). Run by host/workerd's Go tests
// (TestTokenVectorsUnderNode), next to a generated config.mjs:
//   STILE_TOKEN_VECTORS=… node --test token_test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { authenticate, checkSecret, covers, mint, pushToken } from "./token.mjs";

const v = JSON.parse(readFileSync(process.env.STILE_TOKEN_VECTORS, "utf8"));
const env = { STILE_TOKEN: v.secret, STILE_TOKEN_NEXT: v.next, STILE_REVOKED: v.revoked };

for (const c of v.cases) {
  test(c.name, async () => {
    // As workerd gives a request's headers: repeated ones joined by ", ",
    // a missing one as null.
    const header = c.headers?.length ? c.headers.join(", ") : "";
    const who = await authenticate(header, env, v.now * 1000);
    if (c.status) {
      assert.ok(who.refusal, `refused: ${JSON.stringify(who)}`);
      assert.equal(who.status, c.status);
      assert.deepEqual(JSON.parse(who.refusal), { code: c.code, message: c.message });
      return;
    }
    assert.equal(who.refusal, undefined, who.refusal);
    const want = { role: c.role, scope: c.scope, id: c.id };
    if (c.admin) want.admin = true;
    assert.deepEqual(who, want);
    for (const [tenant, want] of Object.entries(c.covers ?? {})) {
      assert.equal(covers(who.scope, tenant), want, `${c.scope} covers ${tenant}`);
    }
  });
}

test("secrets: the Go host's verdicts", () => {
  for (const s of v.secrets) assert.equal(checkSecret("STILE_TOKEN", s.secret), s.error ?? null, JSON.stringify(s.secret));
});

test("a weak secret refuses every request", async () => {
  const who = await authenticate("Bearer test-token", { STILE_TOKEN: "test-token" }, v.now * 1000);
  assert.equal(who.status, 500);
  assert.match(JSON.parse(who.refusal).message, /STILE_TOKEN is too weak/);
});

test("a token minted here verifies in the Go host's words", async () => {
  const tok = await mint(v.secret, { id: "edge-1", scope: "acme", role: "worker", exp: v.now + 60 });
  assert.deepEqual(await authenticate("Bearer " + tok, env, v.now * 1000), { role: "worker", scope: "acme", id: "edge-1" });
  const good = v.cases.find((c) => c.name === "a tenant").headers[0].slice(7);
  assert.equal(await mint(v.secret, { id: "billing-worker", scope: "acme", role: "worker", exp: v.now + 3600 }), good, "the same bytes as token.Mint");
});

test("a push token is a worker token for its tenant only", async () => {
  const tok = await pushToken(v.secret, "acme", v.now * 1000);
  assert.deepEqual(await authenticate("Bearer " + tok, env, v.now * 1000), { role: "worker", scope: "acme", id: "edge-push" });
});
