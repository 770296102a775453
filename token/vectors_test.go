package token

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// Vectors are requests' Authorization headers and the verdict every host
// must reach on them: the Go host's here, the Worker's in host/workerd
// (TestTokenVectorsUnderNode runs js/token.mjs on the same file).
type Vectors struct {
	Secret string `json:"secret"`
	Next   string `json:"next"`
	// Revoked is the revoked list as written (STILE_REVOKED, <data>/revoked).
	Revoked string   `json:"revoked"`
	Now     int64    `json:"now"` // Unix seconds
	Cases   []Vector `json:"cases"`
	// Secrets are secrets a host is started with, and its verdict.
	Secrets []SecretVector `json:"secrets"`
}

// Vector is one request: the principal it authenticates as, or the
// refusal.
type Vector struct {
	Name string `json:"name"`
	// Headers are the request's Authorization header values, in order (the
	// Worker's runtime joins them with ", ").
	Headers []string `json:"headers"`
	// Admin, Role, Scope and ID are who an accepted request is; Status,
	// Code and Message the answer to a refused one.
	Admin   bool            `json:"admin,omitempty"`
	Role    string          `json:"role,omitempty"`
	Scope   string          `json:"scope,omitempty"`
	ID      string          `json:"id,omitempty"`
	Status  int             `json:"status,omitempty"`
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
	Covers  map[string]bool `json:"covers,omitempty"`
}

// SecretVector is a secret and CheckSecret's verdict ("" for a strong one).
type SecretVector struct {
	Secret string `json:"secret"`
	Error  string `json:"error,omitempty"`
}

func vectors(t *testing.T) Vectors {
	v := Vectors{Secret: "vector-secret-0123456789-ABCDEFGHIJ", Next: "vector-next-0123456789-ABCDEFGHIJKL",
		Revoked: "gone-1,other\tgone-2\r\n gone-3\n", Now: 1_800_000_000}
	exp := v.Now + 3600
	mint := func(secret string, c Claims) string {
		tok, err := Mint(secret, c)
		require.NoError(t, err)
		return tok
	}
	// raw signs any claims JSON, valid or not, with the secret's key.
	raw := func(claims string) string { return signed(v.Secret, []byte(claims)) }
	bearer := func(tok string) []string { return []string{"Bearer " + tok} }
	ok := func(name, tok string, c Claims, covers map[string]bool) Vector {
		return Vector{Name: name, Headers: bearer(tok), Role: string(c.Role), Scope: c.Scope, ID: c.ID, Covers: covers}
	}
	refusedH := func(name string, headers []string, err error) Vector {
		e := Refusal(err)
		return Vector{Name: name, Headers: headers, Status: e.Status, Code: string(e.Code), Message: e.Message}
	}
	refused := func(name, tok string, err error) Vector { return refusedH(name, bearer(tok), err) }
	admin := func(name string, headers []string) Vector {
		return Vector{Name: name, Headers: headers, Admin: true, Role: "admin", Scope: "*", ID: "secret"}
	}
	worker := Claims{ID: "billing-worker", Scope: "acme", Role: api.RoleWorker, Exp: exp}
	prefix := Claims{ID: "eu.ops:1", Scope: "acme-*", Role: api.RoleOperator, Exp: exp}
	all := Claims{ID: "reader-9", Scope: "*", Role: api.RoleReader, Exp: exp}
	rotated := Claims{ID: "new-1", Scope: "globex", Role: api.RoleWriter, Exp: exp}
	good := mint(v.Secret, worker)
	kid, payload, sig := splitToken(good)
	// forged: the deployment's kid, another key's signature.
	forgedBody := Prefix + kid + "." + payload
	forged := forgedBody + "." + b64.EncodeToString(sign(SigningKey("not-the-secret"), forgedBody))
	// oldFormat: a stile1 token, signed with the secret itself.
	oldBody := OldPrefix + payload
	oldFormat := oldBody + "." + b64.EncodeToString(sign([]byte(v.Secret), oldBody))
	// A signature holding - or _, to write in the standard alphabet.
	urlSafe := good
	for i := 0; !strings.ContainsAny(urlSafe[strings.LastIndexByte(urlSafe, '.'):], "-_"); i++ {
		urlSafe = mint(v.Secret, Claims{ID: "alphabet-" + string(rune('a'+i)), Scope: "acme", Role: api.RoleWorker, Exp: exp})
	}
	std := strings.NewReplacer("-", "+", "_", "/")
	dot := strings.LastIndexByte(urlSafe, '.')
	v.Cases = []Vector{
		ok("a tenant", good, worker, map[string]bool{"acme": true, "acme-eu": false, "globex": false}),
		ok("a tenant prefix", mint(v.Secret, prefix), prefix, map[string]bool{"acme-eu": true, "acme-": true, "acme": false, "globex": false}),
		ok("every tenant", mint(v.Secret, all), all, map[string]bool{"acme": true, "z": true}),
		ok("signed with the next secret", mint(v.Next, rotated), rotated, map[string]bool{"globex": true}),
		admin("the secret", bearer(v.Secret)),
		admin("the next secret", bearer(v.Next)),
		refusedH("no Authorization header", nil, ErrUnauthorized),
		refusedH("an empty bearer", []string{"Bearer "}, ErrUnauthorized),
		refusedH("the scheme in lower case", []string{"bearer " + good}, ErrUnauthorized),
		refusedH("another scheme", []string{"Basic " + v.Secret}, ErrUnauthorized),
		refusedH("the secret without a scheme", []string{v.Secret}, ErrUnauthorized),
		refusedH("a wrong secret", bearer("wrong"), ErrUnauthorized),
		refusedH("the Authorization header twice, the same token", []string{"Bearer " + good, "Bearer " + good}, ErrUnauthorized),
		refusedH("the Authorization header twice, the secret first", []string{"Bearer " + v.Secret, "Bearer " + good}, ErrUnauthorized),
		refusedH("two spaces after the scheme", []string{"Bearer  " + good}, ErrUnauthorized),
		refusedH("a tab after the scheme", []string{"Bearer\t" + good}, ErrUnauthorized),
		refusedH("whitespace after the token", []string{"Bearer " + good + " "}, ErrUnauthorized),
		refusedH("a newline in the token", []string{"Bearer " + good[:20] + "\n" + good[20:]}, ErrUnauthorized),
		refusedH("a space in the signature", []string{"Bearer " + good[:len(good)-5] + " " + good[len(good)-5:]}, ErrUnauthorized),
		refusedH("a comma after the token", []string{"Bearer " + good + ","}, ErrUnauthorized),
		refused("expired", mint(v.Secret, Claims{ID: "old", Scope: "acme", Role: api.RoleAdmin, Exp: v.Now}), errExpiredAt(v.Now)),
		refused("revoked", mint(v.Secret, Claims{ID: "gone-1", Scope: "*", Role: api.RoleAdmin, Exp: exp}), ErrRevoked),
		refused("revoked after a tab", mint(v.Secret, Claims{ID: "gone-2", Scope: "*", Role: api.RoleAdmin, Exp: exp}), ErrRevoked),
		refused("revoked after a carriage return and a space", mint(v.Secret, Claims{ID: "gone-3", Scope: "*", Role: api.RoleAdmin, Exp: exp}), ErrRevoked),
		refused("forged", forged, ErrForged),
		refused("signed with another secret (an unknown kid)", mint("another-secret-0123456789-abcdefghij", worker), ErrUnknownKey),
		refused("the kid in upper case", Prefix+strings.ToUpper(kid)+"."+payload+"."+sig, ErrUnknownKey),
		refused("no kid", Prefix+payload+"."+sig, ErrMalformed),
		refused("an empty kid", Prefix+"."+payload+"."+sig, ErrMalformed),
		refused("the stile1 format", oldFormat, ErrOldFormat),
		refused("a stile1 prefix only", "stile1.abc", ErrOldFormat),
		refused("a signature cut short", good[:len(good)-3], ErrForged),
		refused("a signature of an impossible length", good[:len(good)-2], ErrMalformed),
		refused("no signature", Prefix+kid+"."+payload, ErrMalformed),
		refused("an empty signature", Prefix+kid+"."+payload+".", ErrMalformed),
		refused("a signature not base64", Prefix+kid+"."+payload+".!!", ErrMalformed),
		refused("a signature in the standard base64 alphabet", urlSafe[:dot]+std.Replace(urlSafe[dot:]), ErrMalformed),
		refused("a signature padded with =", good+"=", ErrMalformed),
		refused("claims padded with =", Prefix+kid+"."+payload+"=."+sig, ErrMalformed),
		refused("claims not JSON", raw(`not json`), ErrMalformed),
		refused("claims a JSON array", raw(`["billing-worker","acme","worker",1800003600]`), ErrMalformed),
		refused("claims null", raw(`null`), ErrMalformed),
		refused("a claim key in upper case", raw(`{"ID":"x","scope":"acme","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("a role key in title case", raw(`{"id":"x","scope":"acme","Role":"admin","exp":1800003600}`), ErrMalformed),
		refused("an extra claim", raw(`{"id":"x","scope":"acme","role":"reader","exp":1800003600,"admin":true}`), ErrMalformed),
		refused("an unknown role", raw(`{"id":"x","scope":"acme","role":"boss","exp":1800003600}`), ErrMalformed),
		refused("a role in upper case", raw(`{"id":"x","scope":"acme","role":"ADMIN","exp":1800003600}`), ErrMalformed),
		refused("an invalid id", raw(`{"id":"-x","scope":"acme","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("no id", raw(`{"scope":"acme","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("an invalid scope", raw(`{"id":"x","scope":"ACME","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("a scope of a lone prefix star", raw(`{"id":"x","scope":"-*","role":"reader","exp":1800003600}`), ErrMalformed),
		refused("no expiry", raw(`{"id":"x","scope":"acme","role":"reader"}`), ErrMalformed),
		refused("an expiry as a string", raw(`{"id":"x","scope":"acme","role":"reader","exp":"1800003600"}`), ErrMalformed),
		refused("a fractional expiry", raw(`{"id":"x","scope":"acme","role":"reader","exp":1800003600.5}`), ErrMalformed),
		refused("an expiry beyond 2^53", raw(`{"id":"x","scope":"acme","role":"reader","exp":9007199254740993}`), ErrMalformed),
		ok("an expiry in exponent notation", raw(`{"id":"x","scope":"acme","role":"reader","exp":1.9e9}`),
			Claims{ID: "x", Scope: "acme", Role: api.RoleReader}, nil),
	}
	v.Secrets = []SecretVector{
		{Secret: ""},
		{Secret: "test-token"},
		{Secret: strings.Repeat("ab", 20)},
		{Secret: "0123456789abcdefghijklmnopqrstu"},
		{Secret: "0123456789abcdefghijklmnopqrstuv"},
		{Secret: "0123456789 abcdefghijklmnopqrstuv"},
		{Secret: "0123456789,abcdefghijklmnopqrstuv"},
		{Secret: "0123456789abcdefghijklmnopqrstuvé"},
		{Secret: "b6Zq0f3Yk2x9Vw_PLd8Hc1TnRa5Ju7Ms-EgQoNiKyWs"},
	}
	for i, s := range v.Secrets {
		if err := CheckSecret("STILE_TOKEN", s.Secret); err != nil {
			v.Secrets[i].Error = err.Error()
		}
	}
	return v
}

func splitToken(tok string) (kid, payload, sig string) {
	p := strings.Split(strings.TrimPrefix(tok, Prefix), ".")
	return p[0], p[1], p[2]
}

func errExpiredAt(exp int64) error {
	c := Claims{ID: "x", Scope: "*", Role: api.RoleReader, Exp: exp}
	b, _ := json.Marshal(c)
	_, err := Verify("s", signed("s", b), time.Unix(exp, 0))
	return err
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

	keys := Keys{Secret: v.Secret, Next: v.Next, Revoked: ParseRevoked(v.Revoked)}
	for _, c := range v.Cases {
		// As the Go server reads them: the header's values, in order.
		r, err := http.NewRequest("GET", "http://stile/v1/t/acme/status", nil)
		require.NoError(t, err)
		for _, h := range c.Headers {
			r.Header.Add("Authorization", h)
		}
		got, err := keys.Authenticate(r.Header.Values("Authorization"), time.Unix(v.Now, 0))
		if c.Status != 0 {
			require.Error(t, err, c.Name)
			e := Refusal(err)
			require.Equal(t, Vector{Name: c.Name, Headers: c.Headers, Status: e.Status, Code: string(e.Code), Message: e.Message}, c, c.Name)
			continue
		}
		require.NoError(t, err, c.Name)
		require.Equal(t, c.Admin, got.Admin, c.Name)
		require.Equal(t, Claims{ID: c.ID, Scope: c.Scope, Role: api.Role(c.Role), Exp: got.Exp}, got.Claims, c.Name)
		for tenant, want := range c.Covers {
			require.Equal(t, want, got.Covers(tenant), "%s covers %s", c.Name, tenant)
		}
	}
}
