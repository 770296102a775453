package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	stiletoken "github.com/stile-run/stile/token"
)

// scenarioTenantMetrics: GET /v1/t/{tenant}/metrics answers the tenant's
// own figures in the Prometheus text format, after known work: jobs by
// kind and state, a reaction's lag, open and failing deliveries, its
// projections, today's usage. A reader of the tenant may read them; a
// token of another tenant may not.
func scenarioTenantMetrics(s *scenario) {
	t := s.t
	tenant := s.ten.Name()
	for range 3 {
		s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	}
	s.enqueue(api.EnqueueRequest{Kind: "test.other"})
	c := s.claim("w", 1, 1)[0]
	_, err := s.ten.Report(s.ctx, c.ID, completed(claimOf(c, "w"), `{}`))
	require.NoError(t, err)
	for range 2 {
		_, err := s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{}`)}}})
		require.NoError(t, err)
	}
	ds := s.deliveries("r", 10, 2, testapp.AuditPolicy)
	res := s.settleOne(api.Settlement{Handler: ds[0].Handler, Seq: ds[0].Event.Seq, ClaimID: ds[0].ClaimID, Outcome: api.OutcomeFailed, Error: "down"})
	require.Nil(t, res.Error)

	get := func(tok string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(s.ctx, "GET", s.tg.client().BaseURL()+"/v1/t/"+tenant+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	mint := func(scope string) string {
		tok, err := stiletoken.Mint(token, stiletoken.Claims{ID: "m-" + scope, Scope: scope, Role: api.RoleReader, Exp: time.Now().Add(time.Hour).Unix()})
		require.NoError(t, err)
		return tok
	}
	status, ctype, body := get(mint(tenant))
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, api.MetricsContentType, ctype)
	lbl := `{tenant="` + tenant + `"`
	for _, line := range []string{
		"# TYPE stile_jobs gauge",
		`stile_jobs` + lbl + `,kind="test.echo",state="available"} 2`,
		`stile_jobs` + lbl + `,kind="test.echo",state="completed"} 1`,
		`stile_jobs` + lbl + `,kind="test.other",state="available"} 1`,
		`stile_reaction_lag_events` + lbl + `,reaction="` + testapp.AuditPolicy + `"} 0`,
		`stile_reaction_open_deliveries` + lbl + `,reaction="` + testapp.AuditPolicy + `"} 2`,
		`stile_reaction_failing_deliveries` + lbl + `,reaction="` + testapp.AuditPolicy + `"} 1`,
		`stile_reaction_failing_deliveries` + lbl + `,reaction="` + testapp.RefundPolicy + `"} 0`,
		`stile_reaction_paused` + lbl + `,reaction="` + testapp.AuditPolicy + `"} 0`,
	} {
		require.Contains(t, body, line+"\n")
	}
	require.Regexp(t, regexp.MustCompile(`(?m)^stile_projection_stalled`+regexp.QuoteMeta(lbl)+`,projection="`+testapp.NotesProjection+`"\} 0$`), body)
	require.Regexp(t, regexp.MustCompile(`(?m)^stile_tenant_requests_today`+regexp.QuoteMeta(lbl)+`\} [1-9]\d*$`), body, "this day's requests so far")
	require.NotContains(t, body, `kind="test.fast"`, "only kinds with jobs")

	status, _, body = get(mint(tenant + "-other"))
	require.Equal(t, http.StatusForbidden, status, body)
	var e api.Error
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	require.Equal(t, api.CodeForbidden, e.Code)
}
