package token

import (
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// Vectors are scoped tokens and the verdict every host must reach on
// them: the Go host's here, the Worker's in host/workerd
// (TestTokenVectorsUnderNode runs js/token.mjs on the same file).
type Vectors struct {
	Secret  string   `json:"secret"`
	Next    string   `json:"next"`
	Revoked []string `json:"revoked"`
	Now     int64    `json:"now"` // Unix seconds
	Cases   []Vector `json:"cases"`
}

// Vector is one token: the claims it verifies to, or the refusal.
type Vector struct {
	Name  string `json:"name"`
	Token string `json:"token"`
	// Role, Scope and ID are the claims of a valid token; Error the
	// message of a refused one.
	Role   string          `json:"role,omitempty"`
	Scope  string          `json:"scope,omitempty"`
	ID     string          `json:"id,omitempty"`
	Error  string          `json:"error,omitempty"`
	Covers map[string]bool `json:"covers,omitempty"`
}

func vectors(t *testing.T) Vectors {
	v := Vectors{Secret: "vector-secret", Next: "vector-next", Revoked: []string{"gone-1"}, Now: 1_800_000_000}
	exp := v.Now + 3600
	mint := func(secret string, c Claims) string {
		tok, err := Mint(secret, c)
		require.NoError(t, err)
		return tok
	}
	// signed signs any claims JSON, valid or not, with the secret.
	signed := func(claims string) string {
		body := Prefix + b64.EncodeToString([]byte(claims))
		return body + "." + b64.EncodeToString(sign(v.Secret, body))
	}
	ok := func(name, tok string, c Claims, covers map[string]bool) Vector {
		return Vector{Name: name, Token: tok, Role: string(c.Role), Scope: c.Scope, ID: c.ID, Covers: covers}
	}
	refused := func(name, tok string, err error) Vector { return Vector{Name: name, Token: tok, Error: err.Error()} }
	worker := Claims{ID: "billing-worker", Scope: "acme", Role: api.RoleWorker, Exp: exp}
	prefix := Claims{ID: "eu.ops:1", Scope: "acme-*", Role: api.RoleOperator, Exp: exp}
	all := Claims{ID: "reader-9", Scope: "*", Role: api.RoleReader, Exp: exp}
	rotated := Claims{ID: "new-1", Scope: "globex", Role: api.RoleWriter, Exp: exp}
	forgedTok := mint("not-the-secret", worker)
	v.Cases = []Vector{
		ok("a tenant", mint(v.Secret, worker), worker, map[string]bool{"acme": true, "acme-eu": false, "globex": false}),
		ok("a tenant prefix", mint(v.Secret, prefix), prefix, map[string]bool{"acme-eu": true, "acme-": true, "acme": false, "globex": false}),
		ok("every tenant", mint(v.Secret, all), all, map[string]bool{"acme": true, "z": true}),
		ok("signed with the next secret", mint(v.Next, rotated), rotated, map[string]bool{"globex": true}),
		refused("expired", mint(v.Secret, Claims{ID: "old", Scope: "acme", Role: api.RoleAdmin, Exp: v.Now}),
			errExpiredAt(v.Now)),
		refused("revoked", mint(v.Secret, Claims{ID: "gone-1", Scope: "*", Role: api.RoleAdmin, Exp: exp}), ErrRevoked),
		refused("forged", forgedTok, ErrForged),
		refused("a signature cut short", forgedTok[:len(forgedTok)-4], ErrForged),
		refused("no signature", Prefix+"e30", ErrMalformed),
		refused("a signature not base64url", Prefix+"e30.!!", ErrMalformed),
		refused("claims not JSON", signed(`not json`), ErrMalformed),
		refused("an unknown role", signed(`{"id":"x","scope":"acme","role":"boss","exp":1800003600}`), ErrMalformed),
		refused("an invalid id", signed(`{"id":"-x","scope":"acme","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("no id", signed(`{"scope":"acme","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("an invalid scope", signed(`{"id":"x","scope":"ACME","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("a scope of a lone prefix star", signed(`{"id":"x","scope":"-*","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("no expiry", signed(`{"id":"x","scope":"acme","role":"reader"}`), ErrMalformed),
		refused("a fractional expiry", signed(`{"id":"x","scope":"acme","role":"reader","exp":1800003600.5}`), ErrMalformed),
	}
	return v
}

func errExpiredAt(exp int64) error {
	_, err := Verify("s", mintUnchecked("s", Claims{ID: "x", Scope: "*", Role: api.RoleReader, Exp: exp}), time.Unix(exp, 0))
	return err
}

func mintUnchecked(secret string, c Claims) string {
	b, _ := json.Marshal(c)
	body := Prefix + b64.EncodeToString(b)
	return body + "." + b64.EncodeToString(sign(secret, body))
}

// TestVectors checks the Go host's verdicts and that testdata/vectors.json
// is what this file makes (go test ./token -update rewrites it).
func TestVectors(t *testing.T) {
	v := vectors(t)
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("testdata/vectors.json", append(b, '\n'), 0o644))
	}
	want, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(b), "testdata/vectors.json is stale: go test ./token -update")

	revoked := map[string]bool{}
	for _, id := range v.Revoked {
		revoked[id] = true
	}
	keys := Keys{Secret: v.Secret, Next: v.Next, Revoked: revoked}
	for _, c := range v.Cases {
		got, err := keys.Verify(c.Token, time.Unix(v.Now, 0))
		if c.Error != "" {
			require.EqualError(t, err, c.Error, c.Name)
			continue
		}
		require.NoError(t, err, c.Name)
		require.Equal(t, Claims{ID: c.ID, Scope: c.Scope, Role: api.Role(c.Role), Exp: got.Exp}, got, c.Name)
		for tenant, want := range c.Covers {
			require.Equal(t, want, got.Covers(tenant), "%s covers %s", c.Name, tenant)
		}
	}
}
