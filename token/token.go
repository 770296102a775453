// Package token mints and verifies scoped tokens: bearer tokens the
// deployment's secret (STILE_TOKEN, itself the admin token) signs for a
// tenant, a tenant prefix or every tenant, with a role and an expiry.
//
// A token is "stile1." + base64url(claims JSON) + "." + base64url(HMAC-
// SHA256(secret, "stile1." + base64url(claims JSON))). An HMAC is verified
// offline by any host holding the secret (the Go host with crypto/hmac, the
// Worker with WebCrypto), needs no key distribution, and has one algorithm
// (no header to choose it, so no algorithm confusion). The module never
// sees a token: the host verifies it and tells the module the role (the
// stile-principal frame header); crypto in the module would cost ~100 KB.
package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
)

// Prefix starts every scoped token.
const Prefix = "stile1."

// Claims are what a token grants.
type Claims struct {
	ID string `json:"id"`
	// Scope is a tenant ("acme"), a tenant prefix ("acme-*") or "*".
	Scope string   `json:"scope"`
	Role  api.Role `json:"role"`
	// Exp is when the token expires, in Unix seconds.
	Exp int64 `json:"exp"`
}

// Errors of Verify.
var (
	ErrRevoked   = errors.New("the token was revoked")
	ErrMalformed = errors.New("the token is not a Stile token")
	ErrForged    = errors.New("the token's signature does not match: it was not made with this deployment's secret")
	ErrExpired   = errors.New("the token expired")
)

var b64 = base64.RawURLEncoding

// Mint signs c with secret.
func Mint(secret string, c Claims) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	payload, _ := json.Marshal(c)
	body := Prefix + b64.EncodeToString(payload)
	return body + "." + b64.EncodeToString(sign(secret, body)), nil
}

func sign(secret, body string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Keys are what a host verifies tokens with: the deployment's secret, the
// next one during a rotation (tokens signed with either are accepted),
// and the ids of revoked tokens.
type Keys struct {
	Secret, Next string
	Revoked      map[string]bool
}

// Verify checks a token against the keys at now.
func (k Keys) Verify(tok string, now time.Time) (Claims, error) {
	c, err := Verify(k.Secret, tok, now)
	if errors.Is(err, ErrForged) && k.Next != "" {
		c, err = Verify(k.Next, tok, now)
	}
	if err == nil && k.Revoked[c.ID] {
		return Claims{}, ErrRevoked
	}
	return c, err
}

// ParseRevoked reads a list of revoked token ids: one per line or
// comma-separated (STILE_REVOKED, or stile dev's <data>/revoked).
func ParseRevoked(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\r' }) {
		out[f] = true
	}
	return out
}

// Verify checks tok's signature with secret and its expiry at now, and
// returns its claims.
func Verify(secret, tok string, now time.Time) (Claims, error) {
	if !strings.HasPrefix(tok, Prefix) {
		return Claims{}, ErrMalformed
	}
	i := strings.LastIndexByte(tok, '.')
	if i <= len(Prefix) {
		return Claims{}, ErrMalformed
	}
	body, sig := tok[:i], tok[i+1:]
	got, err := b64.DecodeString(sig)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if !hmac.Equal(got, sign(secret, body)) {
		return Claims{}, ErrForged
	}
	payload, err := b64.DecodeString(body[len(Prefix):])
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil || c.check() != nil {
		return Claims{}, ErrMalformed
	}
	if now.Unix() >= c.Exp {
		return Claims{}, fmt.Errorf("%w at %s", ErrExpired, time.Unix(c.Exp, 0).UTC().Format(time.RFC3339))
	}
	return c, nil
}

func (c Claims) check() error {
	switch {
	case !api.ValidName(c.ID):
		return fmt.Errorf("token id %q is invalid: use %s", c.ID, api.NameRule)
	case !c.Role.Valid():
		return fmt.Errorf("role %q is not one of %s", c.Role, api.RoleList)
	case c.Exp <= 0:
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
