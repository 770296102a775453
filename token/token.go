// Package token mints and verifies scoped tokens: bearer tokens signed for
// a tenant, a tenant prefix or every tenant, with a role and an expiry.
//
// The deployment's secret (STILE_TOKEN) is the admin token. It never signs
// a scoped token itself: a token is signed with a key derived from it by
// HKDF-SHA256, so a token in a reader's hands tells nothing about the
// secret (no offline guessing of the secret from an HMAC of it). A token is
//
//	"stile2." + kid + "." + base64url(claims JSON) + "." + base64url(HMAC-SHA256(key, what precedes the last dot))
//
// where key and kid (the key's id) are both derived from the secret, so a
// host knows which of its secrets (STILE_TOKEN, or STILE_TOKEN_NEXT during a
// rotation) made a token without trying each, and says so when none did.
// An HMAC is verified offline by any host holding the secret (the Go host
// with crypto/hmac, the Worker with WebCrypto), and has one algorithm (no
// header to choose it, so no algorithm confusion). The module never sees a
// token: the host verifies it and tells the module the role.
//
// Every host reaches the same verdict on the same request: the rules are
// strict (one Authorization header, canonical unpadded base64url, exactly
// the four claim keys in lower case), and testdata/vectors.json pins them
// for the Go host and the Worker (host/workerd/js/token.mjs).
package token

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
)

// Prefix starts every scoped token.
const Prefix = "stile2."

// OldPrefix started the tokens of the first format, signed with the
// secret itself; they are refused (ErrOldFormat).
const OldPrefix = "stile1."

// Claims are what a token grants.
type Claims struct {
	ID string `json:"id"`
	// Scope is a tenant ("acme"), a tenant prefix ("acme-*") or "*".
	Scope string   `json:"scope"`
	Role  api.Role `json:"role"`
	// Exp is when the token expires, in Unix seconds.
	Exp int64 `json:"exp"`
}

// Errors of Verify and Authenticate.
var (
	// ErrUnauthorized is a request with no usable bearer credential: no
	// Authorization header, more than one, not "Bearer <credential>", or a
	// credential that is neither a secret nor a Stile token. The hosts
	// answer it with api.Unauthorized.
	ErrUnauthorized = errors.New("no bearer token")
	ErrRevoked      = errors.New("the token was revoked")
	ErrMalformed    = errors.New("the token is not a Stile token")
	ErrForged       = errors.New("the token's signature does not match: it was not made with this deployment's secret")
	ErrExpired      = errors.New("the token expired")
	ErrOldFormat    = errors.New("the token is in the stile1 format, which is no longer accepted: mint a new one with `stile token mint`")
	ErrUnknownKey   = errors.New("the token's kid names a key this deployment does not hold: it was signed with another secret, or one rotated out since; mint a new one")
	// ErrRevocationsUnavailable refuses every scoped token while the list
	// of revoked tokens cannot be read: a token revoked in it would
	// otherwise pass. The hosts answer it 503.
	ErrRevocationsUnavailable = errors.New("the list of revoked tokens cannot be read, so no scoped token is accepted until it can")
)

var b64 = base64.RawURLEncoding.Strict()

// The HKDF-SHA256 salt and infos of the keys derived from a secret (the
// Worker derives them alike, from these constants).
const (
	HKDFSalt    = "stile2"
	InfoSigning = "stile2 token signing key"
	InfoKeyID   = "stile2 token key id"
)

// SigningKey is the key scoped tokens are signed with, derived from
// secret by HKDF-SHA256.
func SigningKey(secret string) []byte {
	k, err := hkdf.Key(sha256.New, []byte(secret), []byte(HKDFSalt), InfoSigning, 32)
	if err != nil {
		panic(err) // only for a length HKDF-SHA256 cannot give
	}
	return k
}

// KeyID is the id of secret's signing key, written in every token it
// signs: 9 bytes derived by HKDF-SHA256, in base64url (12 characters).
func KeyID(secret string) string {
	k, err := hkdf.Key(sha256.New, []byte(secret), []byte(HKDFSalt), InfoKeyID, 9)
	if err != nil {
		panic(err)
	}
	return b64.EncodeToString(k)
}

// Mint signs c with the key derived from secret.
func Mint(secret string, c Claims) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	if secret == "" {
		return "", errors.New("no secret to sign with")
	}
	payload, _ := json.Marshal(c)
	return signed(secret, payload), nil
}

// signed signs any payload (valid claims or not) with secret's key.
func signed(secret string, payload []byte) string {
	body := Prefix + KeyID(secret) + "." + b64.EncodeToString(payload)
	return body + "." + b64.EncodeToString(sign(SigningKey(secret), body))
}

func sign(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Keys are what a host verifies tokens with: the deployment's secret, the
// next one during a rotation (tokens signed with either are accepted),
// and the ids of revoked tokens.
type Keys struct {
	Secret, Next string
	Revoked      map[string]bool
	// RevokedErr, if set, says the revoked list could not be read: every
	// scoped token is refused with ErrRevocationsUnavailable (the secrets
	// still are the admin).
	RevokedErr error
	// LoadRevoked, if set, is asked for Revoked and RevokedErr when a
	// scoped token is verified (not for the secrets).
	LoadRevoked func() (map[string]bool, error)
}

// Principal is who a request authenticated as.
type Principal struct {
	// Admin is set for the deployment's secret itself; Claims are then
	// {ID: "secret", Scope: "*", Role: admin}.
	Admin bool
	Claims
}

// Authenticate reads a request's Authorization header values: exactly one,
// "Bearer " and a credential of printable ASCII without commas (what a
// repeated header joined by a comma, as the Worker's runtime gives it,
// never is). The deployment's secrets are the admin; a scoped token is
// verified. Any other credential is ErrUnauthorized.
func (k Keys) Authenticate(values []string, now time.Time) (Principal, error) {
	if len(values) != 1 {
		return Principal{}, ErrUnauthorized
	}
	cred, ok := strings.CutPrefix(values[0], "Bearer ")
	if !ok || !validCredential(cred) {
		return Principal{}, ErrUnauthorized
	}
	if equal(cred, k.Secret) || equal(cred, k.Next) {
		return Principal{Admin: true, Claims: Claims{ID: "secret", Scope: "*", Role: api.RoleAdmin}}, nil
	}
	switch {
	case strings.HasPrefix(cred, OldPrefix):
		return Principal{}, ErrOldFormat
	case !strings.HasPrefix(cred, Prefix):
		return Principal{}, ErrUnauthorized
	}
	c, err := k.Verify(cred, now)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Claims: c}, nil
}

// equal compares a credential with a secret in constant time ("" is no
// secret).
func equal(cred, secret string) bool {
	return secret != "" && subtle.ConstantTimeCompare([]byte(cred), []byte(secret)) == 1
}

// validCredential: printable ASCII, no space and no comma.
func validCredential(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == ',' {
			return false
		}
	}
	return true
}

// Verify checks a scoped token against the keys at now: its key, its
// signature, its claims, its expiry, then the revoked list.
func (k Keys) Verify(tok string, now time.Time) (Claims, error) {
	if strings.HasPrefix(tok, OldPrefix) {
		return Claims{}, ErrOldFormat
	}
	rest, ok := strings.CutPrefix(tok, Prefix)
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return Claims{}, ErrMalformed
	}
	kid, payloadB64, sigB64 := parts[0], parts[1], parts[2]
	sig, err := decode(sigB64)
	if err != nil || !canonical(kid) || !canonical(payloadB64) {
		return Claims{}, ErrMalformed
	}
	var secret string
	switch {
	case k.Secret != "" && kid == KeyID(k.Secret):
		secret = k.Secret
	case k.Next != "" && kid == KeyID(k.Next):
		secret = k.Next
	default:
		return Claims{}, ErrUnknownKey
	}
	if !hmac.Equal(sig, sign(SigningKey(secret), tok[:len(tok)-len(sigB64)-1])) {
		return Claims{}, ErrForged
	}
	payload, _ := decode(payloadB64)
	c, err := parseClaims(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if now.Unix() >= c.Exp {
		return Claims{}, fmt.Errorf("%w at %s", ErrExpired, time.Unix(c.Exp, 0).UTC().Format(time.RFC3339))
	}
	if k.LoadRevoked != nil {
		k.Revoked, k.RevokedErr = k.LoadRevoked()
	}
	if k.RevokedErr != nil {
		return Claims{}, ErrRevocationsUnavailable
	}
	if k.Revoked[c.ID] {
		return Claims{}, ErrRevoked
	}
	return c, nil
}

// canonical: non-empty, unpadded base64url, as it encodes (no stray bits).
func canonical(s string) bool {
	_, err := decode(s)
	return err == nil
}

func decode(s string) ([]byte, error) {
	if s == "" {
		return nil, ErrMalformed
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, ErrMalformed // base64's own decoder skips \r and \n
		}
	}
	return b64.DecodeString(s)
}

// maxExp is the largest expiry every host reads exactly (JavaScript's
// Number.MAX_SAFE_INTEGER).
const maxExp = 1<<53 - 1

// parseClaims reads claims strictly: a JSON object of exactly the keys id,
// scope, role and exp (case matters: encoding/json alone would take "ID"),
// of the right types, exp a whole number of seconds.
func parseClaims(payload []byte) (Claims, error) {
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		return Claims{}, err
	}
	id, ok1 := m["id"].(string)
	scope, ok2 := m["scope"].(string)
	role, ok3 := m["role"].(string)
	exp, ok4 := m["exp"].(float64)
	if len(m) != 4 || !ok1 || !ok2 || !ok3 || !ok4 || exp != math.Trunc(exp) || exp <= 0 || exp > maxExp {
		return Claims{}, ErrMalformed
	}
	c := Claims{ID: id, Scope: scope, Role: api.Role(role), Exp: int64(exp)}
	return c, c.check()
}

// ParseRevoked reads a list of revoked token ids, separated by commas or
// ASCII whitespace (STILE_REVOKED, or stile dev's <data>/revoked).
func ParseRevoked(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || strings.ContainsRune(" \t\n\v\f\r", r) }) {
		out[f] = true
	}
	return out
}

func (c Claims) check() error {
	switch {
	case !api.ValidName(c.ID):
		return fmt.Errorf("token id %q is invalid: use %s", c.ID, api.NameRule)
	case !c.Role.Valid():
		return fmt.Errorf("role %q is not one of %s", c.Role, api.RoleList)
	case c.Exp <= 0 || c.Exp > maxExp:
		return errors.New("a token needs an expiry")
	case c.Scope == "*":
	case strings.HasSuffix(c.Scope, "*"):
		if p := strings.TrimSuffix(c.Scope, "*"); p == "" || !api.ValidTenant(p) && !api.ValidTenant(p+"x") {
			return fmt.Errorf("scope %q is not a tenant prefix", c.Scope)
		}
	case !api.ValidTenant(c.Scope):
		return fmt.Errorf("scope %q is not a tenant, a tenant prefix (acme-*) or *", c.Scope)
	}
	return nil
}

// Covers reports whether the scope includes tenant.
// Prefix is the tenant prefix of a prefix scope ("acme-" of "acme-*"),
// and false for a scope of one tenant or of every tenant.
func (c Claims) Prefix() (string, bool) {
	if c.Scope == "*" || !strings.HasSuffix(c.Scope, "*") {
		return "", false
	}
	return strings.TrimSuffix(c.Scope, "*"), true
}

func (c Claims) Covers(tenant string) bool {
	switch {
	case c.Scope == "*":
		return true
	case strings.HasSuffix(c.Scope, "*"):
		return strings.HasPrefix(tenant, strings.TrimSuffix(c.Scope, "*"))
	}
	return c.Scope == tenant
}

// MinSecretLength and MinSecretDistinct bound a deployment's secret: the
// hosts refuse to start with a weaker one.
const (
	MinSecretLength   = 32
	MinSecretDistinct = 10
)

// CheckSecret refuses a secret too weak to be the admin token and the root
// of the signing keys: shorter than 32 characters, of fewer than 10
// distinct characters, or holding anything but printable ASCII other than
// a space or a comma (it is sent as a bearer credential). name says which
// secret it is (STILE_TOKEN, say) in the error.
func CheckSecret(name, s string) error {
	const hint = "`stile token secret` makes a strong one"
	if !validCredential(s) {
		if s == "" {
			return fmt.Errorf("%s is empty: %s", name, hint)
		}
		return fmt.Errorf("%s may hold printable ASCII only, without spaces or commas: %s", name, hint)
	}
	if len(s) < MinSecretLength {
		return fmt.Errorf("%s is too weak: %d characters, at least %d are needed; %s", name, len(s), MinSecretLength, hint)
	}
	distinct := map[byte]bool{}
	for i := 0; i < len(s); i++ {
		distinct[s[i]] = true
	}
	if len(distinct) < MinSecretDistinct {
		return fmt.Errorf("%s is too weak: %d distinct characters, at least %d are needed; %s", name, len(distinct), MinSecretDistinct, hint)
	}
	return nil
}

// Verify checks tok with secret alone (no rotation, nothing revoked).
func Verify(secret, tok string, now time.Time) (Claims, error) {
	return Keys{Secret: secret}.Verify(tok, now)
}

// Refusal is the API's answer to an error of Authenticate: api.Unauthorized
// for no usable credential, 503 revocations_unavailable while the revoked
// list cannot be read, else 401 with the error's words.
func Refusal(err error) *api.Error {
	switch {
	case errors.Is(err, ErrUnauthorized):
		e := api.Unauthorized
		return &e
	case errors.Is(err, ErrRevocationsUnavailable):
		return api.Refuse(api.CodeRevocationsUnavailable, "%s", err.Error())
	}
	return api.Refuse(api.CodeUnauthorized, "%s", err.Error())
}
