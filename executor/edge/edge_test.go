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
)

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSettingsDefaultAndRead(t *testing.T) {
	t.Parallel()
	s, err := readSettings(vars(map[string]string{"STILE_TOKEN": "t"}))
	require.NoError(t, err)
	require.Equal(t, settings{token: "t", concurrency: DefaultConcurrency, budget: DefaultBudgetMs * time.Millisecond,
		subrequests: DefaultSubrequests}, s)

	s, err = readSettings(vars(map[string]string{"STILE_TOKEN": "t", "STILE_EXECUTOR_CONCURRENCY": "2",
		"STILE_EXECUTOR_BUDGET_MS": "1500", "STILE_EXECUTOR_SUBREQUESTS": "50"}))
	require.NoError(t, err)
	require.Equal(t, settings{token: "t", concurrency: 2, budget: 1500 * time.Millisecond, subrequests: 50}, s)
}

func TestSettingsRefused(t *testing.T) {
	t.Parallel()
	_, err := readSettings(vars(nil))
	require.ErrorIs(t, err, ErrMisconfigured)
	require.ErrorContains(t, err, "STILE_TOKEN")
	for _, name := range []string{"STILE_EXECUTOR_CONCURRENCY", "STILE_EXECUTOR_BUDGET_MS", "STILE_EXECUTOR_SUBREQUESTS"} {
		for _, v := range []string{"0", "-3", "ten", "1.5"} {
			_, err := readSettings(vars(map[string]string{"STILE_TOKEN": "t", name: v}))
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
	b := s.budgetFrom(start, &requests)
	require.Equal(t, start.Add(25*time.Second), b.Until)
	require.Equal(t, int64(50), b.Subrequests)
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
