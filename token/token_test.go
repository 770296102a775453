package token_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/token"
)

func TestMintAndVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := token.Claims{ID: "w1", Scope: "acme-*", Role: api.RoleWorker, Exp: now.Add(time.Hour).Unix()}
	tok, err := token.Mint("s3cret", c)
	require.NoError(t, err)
	got, err := token.Verify("s3cret", tok, now)
	require.NoError(t, err)
	require.Equal(t, c, got)
	require.True(t, got.Covers("acme-eu"))
	require.False(t, got.Covers("globex"))

	_, err = token.Verify("other", tok, now)
	require.ErrorIs(t, err, token.ErrForged)
	_, err = token.Verify("s3cret", tok, now.Add(2*time.Hour))
	require.ErrorIs(t, err, token.ErrExpired)
	_, err = token.Verify("s3cret", tok[:len(tok)-2], now)
	require.Error(t, err)
	for _, bad := range []string{"stile1.abc", "bearer-of-something", "stile1.abc.!!"} {
		_, err = token.Verify("s3cret", bad, now)
		require.ErrorIs(t, err, token.ErrMalformed, bad)
	}
	_, err = token.Verify("s3cret", "stile1.bm90LWpzb24.xx", now)
	require.ErrorIs(t, err, token.ErrForged, "the signature is checked before the claims are read")
	for _, bad := range []token.Claims{{ID: "x", Scope: "acme", Role: "boss", Exp: 1}, {ID: "x", Scope: "ACME", Role: "reader", Exp: 1},
		{ID: "x", Scope: "acme", Role: "reader"}, {ID: "", Scope: "*", Role: "reader", Exp: 1}} {
		_, err := token.Mint("s", bad)
		require.Error(t, err, "%+v", bad)
	}
}
