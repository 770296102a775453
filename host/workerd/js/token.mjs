// Scoped tokens (package token), verified with WebCrypto: the same
// verdicts as the Go host's on the vectors in token/testdata/vectors.json
// (host/workerd's TestTokenVectorsUnderNode).

import {
  INTERNAL_PREFIX, PUSH_TOKEN_TTL_S, ROLES, SECRET_MIN_DISTINCT, SECRET_MIN_LENGTH, TENANT_PATTERN, TOKEN_EXPIRED, TOKEN_FORGED, TOKEN_HKDF_SALT,
  TOKEN_INFO_KEY_ID, TOKEN_INFO_SIGNING, TOKEN_MALFORMED, TOKEN_OLD_FORMAT, TOKEN_OLD_PREFIX, TOKEN_PREFIX, TOKEN_REVOKED,
  TOKEN_UNKNOWN_KEY, UNAUTHORIZED,
} from "./config.mjs";

const tenantRe = new RegExp(TENANT_PATTERN);
// api.ValidName: a token's id.
const nameRe = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
// A bearer credential: printable ASCII, no space, no comma (a repeated
// Authorization header reaches the Worker joined by ", ").
const credentialRe = /^[\x21-\x2b\x2d-\x7e]+$/;
const b64urlRe = /^[A-Za-z0-9_-]+$/;
const enc = (s) => new TextEncoder().encode(s);

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

// checkSecret is token.CheckSecret: the words of why a secret is too weak,
// or null for a strong one.
export function checkSecret(name, s) {
  const hint = "`stile token secret` makes a strong one";
  if (!credentialRe.test(s)) {
    if (s === "") return `${name} is empty: ${hint}`;
    return `${name} may hold printable ASCII only, without spaces or commas: ${hint}`;
  }
  if (s.length < SECRET_MIN_LENGTH) {
    return `${name} is too weak: ${s.length} characters, at least ${SECRET_MIN_LENGTH} are needed; ${hint}`;
  }
  const distinct = new Set(s).size;
  if (distinct < SECRET_MIN_DISTINCT) {
    return `${name} is too weak: ${distinct} distinct characters, at least ${SECRET_MIN_DISTINCT} are needed; ${hint}`;
  }
  return null;
}

// keys derives a secret's signing key and its kid by HKDF-SHA256, as
// token.SigningKey and token.KeyID do; once per secret.
const derived = new Map();
function keys(secret) {
  let k = derived.get(secret);
  if (!k) {
    k = (async () => {
      const root = await crypto.subtle.importKey("raw", enc(secret), "HKDF", false, ["deriveBits"]);
      const bits = (info, n) => crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: enc(TOKEN_HKDF_SALT), info: enc(info) }, root, n);
      const raw = await bits(TOKEN_INFO_SIGNING, 256);
      const kid = toB64url(new Uint8Array(await bits(TOKEN_INFO_KEY_ID, 72)));
      const hmac = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
      return { kid, hmac };
    })();
    derived.set(secret, k);
  }
  return k;
}

// mint signs claims ({id, scope, role, exp}) with secret's derived key, as
// token.Mint does.
export async function mint(secret, { id, scope, role, exp }) {
  const k = await keys(secret);
  const body = `${TOKEN_PREFIX}${k.kid}.${toB64url(enc(JSON.stringify({ id, scope, role, exp })))}`;
  return `${body}.${toB64url(new Uint8Array(await crypto.subtle.sign("HMAC", k.hmac, enc(body))))}`;
}

// pushToken is the worker token a tenant's object sends with a push to the
// edge executor: for that tenant only, for api.PushTokenTTL. The
// executor's calls back carry it; it never holds the secret.
export function pushToken(secret, tenant, now = Date.now()) {
  return mint(secret, { id: "edge-push", scope: tenant, role: "worker", exp: Math.floor(now / 1000) + PUSH_TOKEN_TTL_S });
}

// authenticate reads a request's Authorization header (as the runtime
// gives it: repeated headers joined by ", "), as token.Keys.Authenticate
// does: the deployment's secrets are the admin; a scoped token (package
// token: "stile2." kid "." claims "." HMAC-SHA256 signature, base64url,
// signed with a key derived from the secret) is verified here with
// WebCrypto and gives its role and scope. It returns {role, scope, id} or
// {status, refusal} (the answer's JSON body).
export async function authenticate(header, env, now = Date.now()) {
  const secret = env.STILE_TOKEN, next = env.STILE_TOKEN_NEXT;
  for (const [name, s] of [["STILE_TOKEN", secret ?? ""], ["STILE_TOKEN_NEXT", next]]) {
    const weak = s === undefined || s === "" && name === "STILE_TOKEN_NEXT" ? null : checkSecret(name, s);
    if (weak) {
      const message = `${INTERNAL_PREFIX}the Worker's ${weak}, then \`npx wrangler secret put ${name}\``;
      return { status: 500, refusal: JSON.stringify({ code: "internal", message }) };
    }
  }
  const refuse = (message) => ({ status: 401, refusal: JSON.stringify({ code: "unauthorized", message }) });
  const cred = header.startsWith("Bearer ") ? header.slice(7) : "";
  if (!credentialRe.test(cred)) return { status: 401, refusal: UNAUTHORIZED };
  if (same(cred, secret) || same(cred, next)) return { role: "admin", scope: "*", admin: true, id: "secret" };
  if (cred.startsWith(TOKEN_OLD_PREFIX)) return refuse(TOKEN_OLD_FORMAT);
  if (!cred.startsWith(TOKEN_PREFIX)) return { status: 401, refusal: UNAUTHORIZED };
  const parts = cred.slice(TOKEN_PREFIX.length).split(".");
  if (parts.length !== 3) return refuse(TOKEN_MALFORMED);
  const [kid, payload, sigB64] = parts;
  let sig, claims;
  try {
    sig = fromB64url(sigB64);
    fromB64url(kid);
    fromB64url(payload);
  } catch {
    return refuse(TOKEN_MALFORMED);
  }
  let key;
  for (const s of [secret, next]) {
    if (!key && s && (await keys(s)).kid === kid) key = (await keys(s)).hmac;
  }
  if (!key) return refuse(TOKEN_UNKNOWN_KEY);
  if (!(await crypto.subtle.verify("HMAC", key, sig, enc(cred.slice(0, cred.length - sigB64.length - 1))))) return refuse(TOKEN_FORGED);
  try {
    claims = JSON.parse(new TextDecoder().decode(fromB64url(payload)));
  } catch {
    return refuse(TOKEN_MALFORMED);
  }
  // Exactly the four keys, in lower case, of their types: what Go's
  // strict reading of the claims accepts.
  if (claims === null || typeof claims !== "object" || Array.isArray(claims) || Object.keys(claims).length !== 4 ||
    !Number.isSafeInteger(claims.exp) || claims.exp <= 0 || typeof claims.role !== "string" || !ROLES.includes(claims.role) ||
    typeof claims.scope !== "string" || !validScope(claims.scope) || typeof claims.id !== "string" || !nameRe.test(claims.id)) {
    return refuse(TOKEN_MALFORMED);
  }
  if (Math.floor(now / 1000) >= claims.exp) {
    return refuse(`${TOKEN_EXPIRED} at ${new Date(claims.exp * 1000).toISOString().replace(/\.\d{3}Z$/, "Z")}`);
  }
  // STILE_REVOKED lists revoked token ids (stile token revoke), split as
  // token.ParseRevoked splits: commas and ASCII whitespace.
  const revoked = (env.STILE_REVOKED ?? "").split(/[ \t\n\v\f\r,]+/).filter(Boolean);
  if (revoked.includes(claims.id)) return refuse(TOKEN_REVOKED);
  return { role: claims.role, scope: claims.scope, id: claims.id };
}

// fromB64url decodes canonical unpadded base64url (as Go's strict
// RawURLEncoding reads it), and throws on anything else.
function fromB64url(s) {
  if (!b64urlRe.test(s) || s.length % 4 === 1) throw new Error("not base64url");
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  if (toB64url(bytes) !== s) throw new Error("not canonical base64url");
  return bytes;
}

function toB64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// covers says whether a token's scope includes tenant.
export function covers(scope, tenant) {
  if (scope === "*") return true;
  if (scope.endsWith("*")) return tenant.startsWith(scope.slice(0, -1));
  return scope === tenant;
}

// Constant-time comparison of a credential with a secret ("" is none).
function same(cred, secret) {
  if (!secret) return false;
  const a = enc(cred), b = enc(secret);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}
