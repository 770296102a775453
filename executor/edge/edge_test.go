// Natively only: under Node, syumai/workers' package init needs the
// Worker's runtime context and panics.

//go:build !js

package edge

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/token"
)

const secret = "edge-secret-0123456789-abcdefghijklm"

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSettingsDefaultAndRead(t *testing.T) {
	t.Parallel()
	s, err := readSettings(vars(map[string]string{"STILE_TOKEN": secret}))
	require.NoError(t, err)
	require.Equal(t, settings{token: secret, concurrency: DefaultConcurrency, budget: DefaultBudgetMs * time.Millisecond,
		subrequests: DefaultSubrequests}, s)

	s, err = readSettings(vars(map[string]string{"STILE_TOKEN": secret, "STILE_EXECUTOR_CONCURRENCY": "2",
		"STILE_EXECUTOR_BUDGET_MS": "1500", "STILE_EXECUTOR_SUBREQUESTS": "50"}))
	require.NoError(t, err)
	require.Equal(t, settings{token: secret, concurrency: 2, budget: 1500 * time.Millisecond, subrequests: 50}, s)
}

func TestSettingsRefused(t *testing.T) {
	t.Parallel()
	_, err := readSettings(vars(nil))
	require.ErrorIs(t, err, ErrMisconfigured)
	require.ErrorContains(t, err, "STILE_TOKEN")
	for _, name := range []string{"STILE_EXECUTOR_CONCURRENCY", "STILE_EXECUTOR_BUDGET_MS", "STILE_EXECUTOR_SUBREQUESTS"} {
		for _, v := range []string{"0", "-3", "ten", "1.5"} {
			_, err := readSettings(vars(map[string]string{"STILE_TOKEN": secret, name: v}))
			require.ErrorIs(t, err, ErrMisconfigured, "%s=%s", name, v)
			require.ErrorContains(t, err, name+` is "`+v+`": set a positive whole number`)
		}
	}
}

func TestABudgetCountsTheInvocationsRequestsFromItsStart(t *testing.T) {
	t.Parallel()
	s := settings{budget: 25 * time.Second, subrequests: 50}
	var requests atomic.Int64
	requests.Store(3) // made before the push was accepted
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b := s.budgetFrom(start, &requests, 0)
	require.Equal(t, start.Add(25*time.Second), b.Until)
	require.Equal(t, int64(50), b.Subrequests)
	require.Equal(t, int64(49), s.budgetFrom(start, &requests, 1).Subrequests, "the spans' request is kept out")
	require.Equal(t, int64(1), s.budgetFrom(start, &requests, 80).Subrequests, "a push always has one")
	require.Zero(t, b.Used())

	c := &http.Client{Transport: &counted{next: answer200{}, n: &requests}}
	for range 4 {
		resp, err := c.Get("https://provider.example/")
		require.NoError(t, err)
		resp.Body.Close()
	}
	require.Equal(t, int64(4), b.Used(), "each request through counted is a subrequest")

	require.Equal(t, start.Add(30*time.Second), s.lastCall(start), "calls to the object are cut LastCalls after the budget's end")
}

type answer200 struct{}

func (answer200) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rec.WriteString("ok")
	return rec.Result(), nil
}

func TestTheObjectOfARequestIsItsTenants(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "https://stile.internal/v1/t/acme/jobs/7/report", strings.NewReader("{}"))
	tenant, err := tenantOf(r)
	require.NoError(t, err)
	require.Equal(t, "acme", tenant)
	for _, path := range []string{"/v1/tenants", "/v1/t/../jobs", "/elsewhere"} {
		_, err := tenantOf(httptest.NewRequest("GET", "https://stile.internal"+path, nil))
		require.True(t, errors.Is(err, ErrNoTenant), "%s: %v", path, err)
	}
}

// TestWeakSecretRefused: the edge executor does not start with a weak
// secret, as the Worker's entry refuses to serve with one.
func TestWeakSecretRefused(t *testing.T) {
	t.Parallel()
	_, err := readSettings(vars(map[string]string{"STILE_TOKEN": "t"}))
	require.ErrorIs(t, err, ErrMisconfigured)
	require.ErrorContains(t, err, "STILE_TOKEN is too weak")
}

// TestPushTokens: a push is accepted with a worker token for its tenant
// (what the tenant's object mints for it), never with the secret or
// another role's or tenant's token, and the push's calls to the object
// carry that token.
func TestPushTokens(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	tokens := newPushTokens(settings{token: secret, revoked: "gone"})
	mint := func(id, scope string, role api.Role) string {
		tok, err := token.Mint(secret, token.Claims{ID: id, Scope: scope, Role: role, Exp: now.Add(time.Minute).Unix()})
		require.NoError(t, err)
		return tok
	}
	push := api.PushRequest{Tenant: "acme", ID: "p1"}
	for _, bad := range []string{secret, mint("w", "globex", api.RoleWorker), mint("a", "*", api.RoleAdmin), mint("gone", "acme", api.RoleWorker)} {
		require.Error(t, tokens.authorize(bad, push, now))
	}
	require.Empty(t, tokens.forTenant("acme"), "a refused push leaves no token")
	good := mint("edge-push", "acme", api.RoleWorker)
	require.NoError(t, tokens.authorize(good, push, now))

	var got []string
	rt := &withPushToken{tokens: tokens, next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Get("Authorization"))
		return httptest.NewRecorder().Result(), nil
	})}
	r := httptest.NewRequest("POST", "https://stile.internal/v1/t/acme/claims", nil)
	r.Header.Set("Authorization", "Bearer the-push-token")
	_, err := rt.RoundTrip(r)
	require.NoError(t, err)
	require.Equal(t, []string{"Bearer " + good}, got)
	require.Equal(t, "Bearer the-push-token", r.Header.Get("Authorization"), "the caller's request is not changed")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
