package e2e_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	stiletoken "github.com/stile-run/stile/token"
)

// badRequest is one request the bad-input suite sends: what is wrong with
// it, and the status and code every host must refuse it with (code "":
// any 4xx code, for the request whose verdict depends on the route).
type badRequest struct {
	what         string
	method, path string
	query        string
	body         []byte
	auth         string // the Authorization header ("" for none)
	pad          int    // the size of an X-Pad header (0: none)
	status       int
	code         api.Code
}

// badVerdicts keeps the first host's answer to each bad request, with the
// tenant's name taken out, so that the other hosts' answers are compared
// with it: one verdict, in the same words, everywhere.
var badVerdicts sync.Map

// scenarioBadInputChangesNothing sends several hundred malformed,
// unauthorized, misaddressed and oversized requests, covering every route
// of the API, and after each one reads the tenant's whole state (its
// export, row for row): each is refused with a one-line JSON {code,
// message}, the status the case says, the same answer as in every other
// host, and leaves the state byte for byte as it was. A refusal for a
// tenant that does not exist leaves no tenant either.
func scenarioBadInputChangesNothing(s *scenario) {
	t := s.t
	tenant := s.ten.Name()
	// State to keep: jobs in two states, an event, a schedule, a paused
	// queue, a concurrency limit. Nothing of it moves with time (no lease,
	// nothing due within the run).
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"n":1}`)})
	later := time.Now().Add(24 * time.Hour)
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: &later})
	_, err := s.ten.Append(s.ctx, "misc:1", api.AppendRequest{Events: []api.NewEvent{{Type: "Misc", Data: json.RawMessage(`{}`)}}})
	require.NoError(t, err)
	_, err = s.ten.PutSchedule(s.ctx, "nightly", api.ScheduleRequest{Cron: "0 3 * * *", Job: api.EnqueueRequest{Kind: "test.echo"}})
	require.NoError(t, err)
	_, err = s.ten.PauseQueue(s.ctx, "parked", true)
	require.NoError(t, err)
	_, err = s.ten.SetLimit(s.ctx, "k", 2)
	require.NoError(t, err)
	state := func() map[string][]string {
		t.Helper()
		return dump(s.exportAll(s.ten, 0))
	}
	// Whatever settles after the writes (the reactions' and projections'
	// catching up) settles before the baseline.
	var before map[string][]string
	require.Eventually(t, func() bool {
		a := state()
		time.Sleep(50 * time.Millisecond)
		before = state()
		return jsonEqual(a, before)
	}, 20*time.Second, 10*time.Millisecond, "the tenant's state settles")

	later = time.Now().Add(time.Hour)
	mint := func(scope string, role api.Role) string {
		tok, err := stiletoken.Mint(token, stiletoken.Claims{ID: "bad-" + string(role), Scope: scope, Role: role, Exp: later.Unix()})
		require.NoError(t, err)
		return "Bearer " + tok
	}
	admin := "Bearer " + token
	reader := mint("*", api.RoleReader)
	otherTenant := mint("someone-else", api.RoleAdmin)
	forged := "Bearer " + stiletoken.Prefix + "eyJpZCI6IngifQ.c2lnbmF0dXJl"
	ghost := tenant + "-ghost"

	param := regexp.MustCompile(`\{[a-z]+\}`)
	pathOf := func(tenant string, r api.Route, arg string) string {
		p := "/v1/t/" + tenant
		if r.Pattern != "" {
			p += "/" + param.ReplaceAllString(r.Pattern, arg)
		}
		return p
	}
	var cases []badRequest
	for _, r := range api.Routes() {
		p := pathOf(tenant, r, "9")
		name := r.String()
		cases = append(cases,
			badRequest{what: name + ": no token", method: r.Method, path: p, status: 401, code: api.CodeUnauthorized},
			badRequest{what: name + ": the wrong secret", method: r.Method, path: p, auth: "Bearer not-the-token", status: 401, code: api.CodeUnauthorized},
			badRequest{what: name + ": a forged scoped token", method: r.Method, path: p, auth: forged, status: 401, code: api.CodeUnauthorized},
			badRequest{what: name + ": another tenant's token", method: r.Method, path: p, auth: otherTenant, status: 403, code: api.CodeForbidden},
			badRequest{what: name + ": an unknown query parameter", method: r.Method, path: p, query: "bogus=1", auth: admin, status: unlessParams(r, 400), code: api.CodeInvalidRequest},
			badRequest{what: name + ": an empty segment", method: r.Method, path: "/v1/t/" + tenant + "//" + strings.TrimPrefix(p, "/v1/t/"+tenant+"/"), auth: admin, status: 400, code: api.CodeInvalidRequest},
			badRequest{what: name + ": an invalid tenant name", method: r.Method, path: pathOf("Not_A-Tenant!", r, "9"), auth: admin, status: 400, code: api.CodeInvalidTenant},
			badRequest{what: name + ": a tenant never created, by a reader", method: r.Method, path: pathOf(ghost, r, "9"), auth: reader, status: 404, code: api.CodeTenantNotFound},
			badRequest{what: name + ": a method it does not take", method: "PATCH", path: p, auth: admin, status: 405, code: api.CodeMethodNotAllowed},
		)
		if r.Allows(api.RoleReader) {
			if strings.Contains(r.Pattern, "{") {
				cases = append(cases, badRequest{what: name + ": a parameter that names nothing valid", method: r.Method,
					path: pathOf(tenant, r, "%20bad%20"), auth: admin, status: 0})
			}
		} else {
			cases = append(cases, badRequest{what: name + ": a reader's token", method: r.Method, path: p, auth: reader, status: 403, code: api.CodeForbidden})
		}
		if r.Method == "POST" || r.Method == "PUT" {
			cases = append(cases,
				badRequest{what: name + ": malformed JSON", method: r.Method, path: p, body: []byte(`{"kind":`), auth: admin, status: unlessParams(r, 400)},
				badRequest{what: name + ": a JSON array", method: r.Method, path: p, body: []byte(`[1,2]`), auth: admin, status: unlessParams(r, 400)},
				badRequest{what: name + ": an unknown field", method: r.Method, path: p, body: []byte(`{"bogus_field":1}`), auth: admin, status: unlessParams(r, 400)},
				badRequest{what: name + ": data after the object", method: r.Method, path: p, body: []byte(`{} {}`), auth: admin, status: unlessParams(r, 400)},
			)
		}
	}
	big := []byte(`{"kind":"test.echo","args":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}`)
	cases = append(cases,
		badRequest{what: "enqueue: a body over the limit", method: "POST", path: pathOf(tenant, api.RouteEnqueue, ""), body: big, auth: admin, status: 413, code: api.CodeBodyTooLarge},
		badRequest{what: "append: a body over the limit", method: "POST", path: pathOf(tenant, api.RouteAppend, "s"), body: big, auth: admin, status: 413, code: api.CodeBodyTooLarge},
		badRequest{what: "enqueue: an unknown kind", method: "POST", path: pathOf(tenant, api.RouteEnqueue, ""), body: []byte(`{"kind":"no.such.kind"}`), auth: admin, status: 400, code: api.CodeUnknownKind},
		badRequest{what: "enqueue: args over 1 MiB", method: "POST", path: pathOf(tenant, api.RouteEnqueue, ""), body: []byte(`{"kind":"test.echo","args":"` + strings.Repeat("a", api.MaxArgsBytes) + `"}`), auth: admin, status: 400, code: api.CodeTooLarge},
		badRequest{what: "enqueue: a queue name with a space", method: "POST", path: pathOf(tenant, api.RouteEnqueue, ""), body: []byte(`{"kind":"test.echo","queue":"a b"}`), auth: admin, status: 400},
		badRequest{what: "claim: a negative limit", method: "POST", path: pathOf(tenant, api.RouteClaim, ""), body: []byte(`{"worker":"w","limit":-1}`), auth: admin, status: 400},
		badRequest{what: "report: a job that does not exist", method: "POST", path: pathOf(tenant, api.RouteReport, "999999"), body: []byte(`{"worker":"w","attempt":1,"lease_token":"x","outcome":"completed"}`), auth: admin, status: 404},
		badRequest{what: "report: an outcome that is no outcome", method: "POST", path: pathOf(tenant, api.RouteReport, j.ID), body: []byte(`{"worker":"w","attempt":1,"lease_token":"x","outcome":"maybe"}`), auth: admin, status: 400},
		badRequest{what: "schedule: a cron that never fires", method: "PUT", path: pathOf(tenant, api.RoutePutSchedule, "never"), body: []byte(`{"cron":"0 0 0 30 2 *","job":{"kind":"test.echo"}}`), auth: admin, status: 400},
		badRequest{what: "schedule: a step past its field", method: "PUT", path: pathOf(tenant, api.RoutePutSchedule, "huge"), body: []byte(`{"cron":"*/9223372036854775807 * * * *","job":{"kind":"test.echo"}}`), auth: admin, status: 400},
		badRequest{what: "list: a repeated parameter", method: "GET", path: pathOf(tenant, api.RouteListJobs, ""), query: "limit=1&limit=2", auth: admin, status: 400, code: api.CodeInvalidRequest},
		badRequest{what: "list: a state that is no state", method: "GET", path: pathOf(tenant, api.RouteListJobs, ""), query: "state=sleeping", auth: admin, status: 400, code: api.CodeInvalidRequest},
		badRequest{what: "events: a negative after", method: "GET", path: pathOf(tenant, api.RouteEvents, ""), query: "after=-1", auth: admin, status: 400, code: api.CodeInvalidRequest},
		badRequest{what: "erase: without its confirmation", method: "DELETE", path: pathOf(tenant, api.RouteErase, ""), auth: admin, status: 400, code: api.CodeInvalidRequest},
		badRequest{what: "erase: confirming another tenant", method: "DELETE", path: pathOf(tenant, api.RouteErase, ""), query: "confirm=" + ghost, auth: admin, status: 400, code: api.CodeInvalidRequest},
		badRequest{what: "tenants: a repeated parameter", method: "GET", path: api.TenantsPath, query: "limit=1&limit=2", auth: admin, status: 400, code: api.CodeInvalidRequest},
		badRequest{what: "tenants: a scoped token", method: "GET", path: api.TenantsPath, auth: mint(tenant, api.RoleAdmin), status: 403, code: api.CodeForbidden},
		badRequest{what: "tenants: no token", method: "GET", path: api.TenantsPath, status: 401, code: api.CodeUnauthorized},
		badRequest{what: "no route", method: "GET", path: "/v1/nowhere", auth: admin, status: 404, code: api.CodeNotFound},
		badRequest{what: "enqueue: headers over the limit", method: "POST", path: pathOf(tenant, api.RouteEnqueue, ""), body: []byte(`{"kind":"test.echo"}`), auth: admin, pad: api.MaxHeaderBytes + 1, status: 431, code: api.CodeHeadersTooLarge},
		badRequest{what: "status: headers over the limit", method: "GET", path: pathOf(tenant, api.RouteStatus, ""), auth: admin, pad: api.MaxHeaderBytes + 1, status: 431, code: api.CodeHeadersTooLarge},
		badRequest{what: "tenants: headers over the limit", method: "GET", path: api.TenantsPath, auth: admin, pad: api.MaxHeaderBytes + 1, status: 431, code: api.CodeHeadersTooLarge},
	)
	require.GreaterOrEqual(t, len(cases), 250, "the suite sends at least 250 bad requests")

	for _, c := range cases {
		h := http.Header{}
		if c.auth != "" {
			h.Set("Authorization", c.auth)
		}
		if c.pad > 0 {
			h.Set("X-Pad", strings.Repeat("p", c.pad))
		}
		path := c.path
		if c.query != "" {
			path += "?" + c.query
		}
		cl := s.tg.client()
		if c.auth == "" {
			cl = client.New(cl.BaseURL(), "", nil) // sends no token at all
		}
		status, out, err := cl.Raw(s.ctx, c.method, path, c.body, h)
		require.NoError(t, err, c.what)
		require.True(t, status >= 400 && status < 500, "%s: %d %s", c.what, status, out)
		if c.status != 0 {
			require.Equal(t, c.status, status, "%s: %s", c.what, out)
		}
		var e api.Error
		require.NoError(t, json.Unmarshal(out, &e), "%s: the refusal is JSON: %s", c.what, out)
		if c.code != "" && c.status != 0 {
			require.Equal(t, c.code, e.Code, "%s: %s", c.what, out)
		}
		require.NotEmpty(t, e.Code, c.what)
		require.NotEmpty(t, e.Message, c.what)
		require.NotContains(t, e.Message, "\n", "%s: one line", c.what)
		verdict := strings.ReplaceAll(http.StatusText(status)+" "+string(out), tenant, "{tenant}")
		if first, loaded := badVerdicts.LoadOrStore(c.what, verdict); loaded {
			require.Equal(t, first, verdict, "%s: every host answers alike", c.what)
		}
		require.True(t, jsonEqual(before, state()), "%s changed the tenant's state", c.what)
	}
	page, err := s.tg.client().Tenants(s.ctx, api.TenantsQuery{After: ghost[:len(ghost)-1], Limit: 10})
	require.NoError(t, err)
	require.NotContains(t, tenantNames(page), ghost, "no refusal created a tenant")
	if p := s.tg.inProcess(); p != nil {
		require.False(t, p.manager.Exists(ghost), "no refusal left a file")
	}
	t.Logf("%d bad requests refused, the state unchanged after each", len(cases))
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// unlessParams is status for a route without path parameters; 0 (any 4xx)
// for one with, where the parameter may be refused first (a query that
// is not registered, say).
func unlessParams(r api.Route, status int) int {
	if strings.Contains(r.Pattern, "{") {
		return 0
	}
	return status
}
