// The Worker's token verification against the vectors the Go host checks
// (token/testdata/vectors.json). Run by host/workerd's Go tests
// (TestTokenVectorsUnderNode), next to a generated config.mjs:
//   STILE_TOKEN_VECTORS=… node --test token_test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { authenticate, covers } from "./token.mjs";

const v = JSON.parse(readFileSync(process.env.STILE_TOKEN_VECTORS, "utf8"));
const env = { STILE_TOKEN: v.secret, STILE_TOKEN_NEXT: v.next, STILE_REVOKED: v.revoked.join(",") };

for (const c of v.cases) {
  test(c.name, async () => {
    const who = await authenticate("Bearer " + c.token, env, v.now * 1000);
    if (c.error) {
      assert.ok(who.refusal, `refused: ${JSON.stringify(who)}`);
      assert.deepEqual(JSON.parse(who.refusal), { code: "unauthorized", message: c.error });
      return;
    }
    assert.equal(who.refusal, undefined, who.refusal);
    assert.deepEqual(who, { role: c.role, scope: c.scope, id: c.id });
    for (const [tenant, want] of Object.entries(c.covers ?? {})) {
      assert.equal(covers(who.scope, tenant), want, `${c.scope} covers ${tenant}`);
    }
  });
}

test("the deployment's secrets are the admin", async () => {
  for (const s of [v.secret, v.next]) {
    assert.deepEqual(await authenticate("Bearer " + s, env, v.now * 1000), { role: "admin", scope: "*", admin: true, id: "secret" });
  }
});
