package token_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/token"
)

const secret = "s3cret-s3cret-0123456789-abcdefghij"

func TestMintAndVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := token.Claims{ID: "w1", Scope: "acme-*", Role: api.RoleWorker, Exp: now.Add(time.Hour).Unix()}
	tok, err := token.Mint(secret, c)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok, token.Prefix+token.KeyID(secret)+"."), tok)
	got, err := token.Verify(secret, tok, now)
	require.NoError(t, err)
	require.Equal(t, c, got)
	require.True(t, got.Covers("acme-eu"))
	require.False(t, got.Covers("globex"))

	_, err = token.Verify("other-other-0123456789-abcdefghijk", tok, now)
	require.ErrorIs(t, err, token.ErrUnknownKey)
	_, err = token.Verify(secret, tok, now.Add(2*time.Hour))
	require.ErrorIs(t, err, token.ErrExpired)
	for _, bad := range []token.Claims{{ID: "x", Scope: "acme", Role: "boss", Exp: 1}, {ID: "x", Scope: "ACME", Role: "reader", Exp: 1},
		{ID: "x", Scope: "acme", Role: "reader"}, {ID: "", Scope: "*", Role: "reader", Exp: 1}} {
		_, err := token.Mint(secret, bad)
		require.Error(t, err, "%+v", bad)
	}
}

// TestTokenIsNoOracleForTheSecret: a scoped token is signed with a key
// derived from the secret, never with the secret itself, so an HMAC of the
// secret a token holder could test guesses against appears nowhere.
func TestTokenIsNoOracleForTheSecret(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok, err := token.Mint(secret, token.Claims{ID: "r", Scope: "*", Role: api.RoleReader, Exp: now.Add(time.Hour).Unix()})
	require.NoError(t, err)
	require.NotContains(t, tok, secret)
	i := strings.LastIndexByte(tok, '.')
	// Were the secret the HMAC key, this guess would confirm it offline.
	require.NotEqual(t, hmacB64([]byte(secret), tok[:i]), tok[i+1:])
	require.Equal(t, hmacB64(token.SigningKey(secret), tok[:i]), tok[i+1:])
	require.NotEqual(t, []byte(secret), token.SigningKey(secret))
	require.NotEqual(t, token.KeyID(secret), token.KeyID(secret+"x"), "each secret has its own kid")
}

func TestRefusal(t *testing.T) {
	require.Equal(t, api.Unauthorized, *token.Refusal(token.ErrUnauthorized))
	e := token.Refusal(token.ErrRevocationsUnavailable)
	require.Equal(t, 503, e.Status)
	require.Equal(t, api.CodeRevocationsUnavailable, e.Code)
	e = token.Refusal(token.ErrForged)
	require.Equal(t, 401, e.Status)
	require.Equal(t, token.ErrForged.Error(), e.Message)
}

// TestRevocationsUnavailableFailClosed: while the revoked list cannot be
// read, no scoped token passes; the secret still does.
func TestRevocationsUnavailableFailClosed(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok, err := token.Mint(secret, token.Claims{ID: "r", Scope: "*", Role: api.RoleReader, Exp: now.Add(time.Hour).Unix()})
	require.NoError(t, err)
	keys := token.Keys{Secret: secret, RevokedErr: errors.New("permission denied")}
	_, err = keys.Authenticate([]string{"Bearer " + tok}, now)
	require.ErrorIs(t, err, token.ErrRevocationsUnavailable)
	p, err := keys.Authenticate([]string{"Bearer " + secret}, now)
	require.NoError(t, err)
	require.True(t, p.Admin)
}

func hmacB64(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
