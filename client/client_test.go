package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
		{Status: 404, Code: api.CodeNotFound}, {Status: 413, Code: "body_too_large"},
		{Status: 500, Code: api.CodeDecidePanicked}, {Status: 500, Code: api.CodeEventUndecodable}} {
		require.False(t, client.Retryable(e), "%v", e)
	}
}

// A worker reads the answers of a newer server: fields it does not know
// are skipped, as encoding/json skips them; an answer that is no JSON of
// its type is an error that names the request.
func TestAnswersOfANewerServer(t *testing.T) {
	t.Parallel()
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	ten := client.New(srv.URL, "token", srv.Client()).Tenant("acme")
	ctx := context.Background()

	body = `{"now":"2026-01-02T03:04:05.678Z","jobs":[{"id":"7","kind":"email","queue":"q","args":{"to":"a"},"attempt":1,"lease_ms":30000,` +
		`"lease_until":"2026-01-02T03:04:35.678Z","lease_token":"tok","tags":["t"],"priority_class":"high"}],"more":true,"region":{"id":"eu"}}`
	claim, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w", Limit: 10})
	require.NoError(t, err)
	require.True(t, claim.More)
	require.Len(t, claim.Jobs, 1)
	j := claim.Jobs[0]
	require.Equal(t, "7", j.ID)
	require.JSONEq(t, `{"to":"a"}`, string(j.Args))
	require.Equal(t, []string{"t"}, j.Tags)
	require.Equal(t, 30*time.Second, j.LeaseUntil.Sub(claim.Now))

	body = `{"results":[{"job_id":"7","error":{"code":"stale_attempt","message":"m","hint":"x"}}],"took_ms":2}`
	res, err := ten.ReportBatch(ctx, []api.BatchReport{{JobID: "7"}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.ErrorIs(t, res[0].Error, api.ErrStale)

	body = `{"now":"2026-01-02T03:04:05.678Z","lease_until":"soon"}`
	_, err = ten.Heartbeat(ctx, "7", api.Claim{Worker: "w"})
	require.ErrorContains(t, err, "POST /v1/t/acme/jobs/7/heartbeat: decode response")
	require.ErrorContains(t, err, "lease_until")
}
