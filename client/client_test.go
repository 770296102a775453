package client_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// What is worth sending again: transport failures and the server's own
// trouble, including a platform's plain-text 5xx; never a refusal.
func TestRetryable(t *testing.T) {
	t.Parallel()
	require.False(t, client.Retryable(nil))
	require.True(t, client.Retryable(errors.New("connection reset")))
	for _, e := range []*api.Error{{Status: 500, Code: "http_500"}, {Status: 503, Code: "http_503"},
		{Status: 500, Code: api.CodeInternal}, {Status: 429, Code: "http_429"}} {
		require.True(t, client.Retryable(e), "%v", e)
	}
	for _, e := range []*api.Error{{Status: 400, Code: api.CodeInvalidRequest}, {Status: 409, Code: "claim_taken_over"},
		{Status: 404, Code: api.CodeNotFound}, {Status: 413, Code: "body_too_large"}} {
		require.False(t, client.Retryable(e), "%v", e)
	}
}
