// Scoped tokens (package token), verified with WebCrypto: the same
// verdicts as the Go host's on the vectors in token/testdata/vectors.json
// (host/workerd's TestTokenVectorsUnderNode).

import { ROLES, TENANT_PATTERN, TOKEN_EXPIRED, TOKEN_FORGED, TOKEN_MALFORMED, TOKEN_PREFIX, TOKEN_REVOKED, UNAUTHORIZED } from "./config.mjs";

const tenantRe = new RegExp(TENANT_PATTERN);
// api.ValidName: a token's id.
const nameRe = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

// validScope is token.Claims.check's rule: *, a tenant prefix (acme-*) or
// a tenant.
function validScope(scope) {
  if (scope === "*") return true;
  if (scope.endsWith("*")) {
    const p = scope.slice(0, -1);
    return p !== "" && (tenantRe.test(p) || tenantRe.test(p + "x"));
  }
  return tenantRe.test(scope);
}

// authenticate reads a request's bearer token: the deployment's secret is
// the admin; a scoped token (package token: "stile1." payload "." HMAC-
// SHA256 signature, base64url) is verified here with WebCrypto and gives
// its role and scope. It returns {role, scope} or {refusal} (a 401 body).
export async function authenticate(header, env, now = Date.now()) {
  const secret = env.STILE_TOKEN, next = env.STILE_TOKEN_NEXT;
  if (tokenMatches(header, secret) || (next && tokenMatches(header, next))) return { role: "admin", scope: "*", admin: true, id: "secret" };
  const tok = header.startsWith("Bearer ") ? header.slice(7) : "";
  if (!tok.startsWith(TOKEN_PREFIX)) return { refusal: UNAUTHORIZED };
  const refuse = (message) => ({ refusal: JSON.stringify({ code: "unauthorized", message }) });
  const dot = tok.lastIndexOf(".");
  if (dot <= TOKEN_PREFIX.length) return refuse(TOKEN_MALFORMED);
  const body = tok.slice(0, dot);
  let sig, claims;
  try {
    sig = fromB64url(tok.slice(dot + 1));
  } catch {
    return refuse(TOKEN_MALFORMED);
  }
  const signed = async (s) => {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(s), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    return crypto.subtle.verify("HMAC", key, sig, new TextEncoder().encode(body));
  };
  if (!(await signed(secret)) && !(next && (await signed(next)))) return refuse(TOKEN_FORGED);
  try {
    claims = JSON.parse(new TextDecoder().decode(fromB64url(body.slice(TOKEN_PREFIX.length))));
  } catch {
    return refuse(TOKEN_MALFORMED);
  }
  if (typeof claims?.exp !== "number" || !Number.isInteger(claims.exp) || claims.exp <= 0 || !ROLES.includes(claims.role) ||
    typeof claims.scope !== "string" || !validScope(claims.scope) || typeof claims.id !== "string" || !nameRe.test(claims.id)) {
    return refuse(TOKEN_MALFORMED);
  }
  if (Math.floor(now / 1000) >= claims.exp) {
    return refuse(`${TOKEN_EXPIRED} at ${new Date(claims.exp * 1000).toISOString().replace(/\.\d{3}Z$/, "Z")}`);
  }
  // STILE_REVOKED lists revoked token ids (stile token revoke).
  const revoked = (env.STILE_REVOKED ?? "").split(/[\s,]+/).filter(Boolean);
  if (revoked.includes(claims.id)) return refuse(TOKEN_REVOKED);
  return { role: claims.role, scope: claims.scope, id: claims.id };
}

function fromB64url(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

// covers says whether a token's scope includes tenant.
export function covers(scope, tenant) {
  if (scope === "*") return true;
  if (scope.endsWith("*")) return tenant.startsWith(scope.slice(0, -1));
  return scope === tenant;
}

// Constant-time comparison of the bearer token.
function tokenMatches(header, token) {
  if (!token || !header.startsWith("Bearer ")) return false;
  const a = new TextEncoder().encode(header.slice(7)), b = new TextEncoder().encode(token);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}

