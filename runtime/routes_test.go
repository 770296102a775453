package runtime

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// TestEveryRouteHasAHandler: the route table serves each api.Route that
// package api declares, once, and nothing else.
func TestEveryRouteHasAHandler(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "../api/routes.go", nil, 0)
	require.NoError(t, err)
	declared := map[api.Route]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok || len(lit.Elts) != 2 {
			return true
		}
		m, _ := strconv.Unquote(lit.Elts[0].(*ast.BasicLit).Value)
		p, _ := strconv.Unquote(lit.Elts[1].(*ast.BasicLit).Value)
		declared[api.Route{Method: m, Pattern: p}] = vs.Names[0].Name
		return true
	})
	require.NotEmpty(t, declared)
	served := map[api.Route]bool{}
	for _, r := range routes {
		require.False(t, served[r.Route], "%s is in the table twice", r.Route)
		served[r.Route] = true
		_, ok := declared[r.Route]
		require.True(t, ok, "%s is served but not declared in package api", r.Route)
		require.LessOrEqual(t, strings.Count(r.Pattern, "{"), maxParams, r.Route.String())
	}
	for r, name := range declared {
		require.True(t, served[r], "api.%s (%s) has no handler in the route table", name, r)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path string
		found        bool
		params       []string
		allow        string
	}{
		{"GET", "jobs", true, nil, ""},
		{"POST", "jobs/batch", true, nil, ""},
		{"GET", "jobs/batch", false, nil, "POST"}, // the literal pattern wins over jobs/{id}
		{"GET", "jobs/42", true, []string{"42"}, ""},
		{"PUT", "jobs/42", false, nil, "GET, DELETE"},
		{"POST", "jobs/42/heartbeat", true, []string{"42"}, ""},
		{"POST", "reactions/refunds/skip", true, []string{"refunds"}, ""},
		{"DELETE", "jobs", false, nil, "GET, POST"},
		{"POST", "reactions/claims", true, nil, ""},
		{"GET", "jobs/", false, nil, ""}, // an empty parameter matches nothing
		{"GET", "jobs/42/", false, nil, ""},
		{"GET", "nowhere", false, nil, ""},
		{"GET", "", false, nil, "DELETE, PUT"}, // the tenant itself is only created or erased
	} {
		h, in, allow := lookup(tc.method, tc.path)
		require.Equal(t, tc.found, h != nil, "%s %s", tc.method, tc.path)
		if tc.found {
			for i, p := range tc.params {
				require.Equal(t, p, in.params[i], "%s %s", tc.method, tc.path)
			}
		}
		require.Equal(t, tc.allow, allow, "%s %s: the methods of a path asked with another one", tc.method, tc.path)
	}
}

func TestEveryRouteNamesTheRolesThatMayCallIt(t *testing.T) {
	for _, r := range routes {
		require.NotEmpty(t, r.AllowedRoles(), "%s has no roles in api's routeRoles", r.Route)
		require.True(t, r.Allows(api.RoleAdmin), "%s: the admin may call every route", r.Route)
	}
}

func TestTheRouteTableAndTheRoleTableHoldTheSameRoutes(t *testing.T) {
	var table []api.Route
	for _, r := range routes {
		table = append(table, r.Route)
	}
	require.ElementsMatch(t, api.Routes(), table)
}

// routeAt matches path, as a transport hands it to the module (decoded),
// against the route table: the route found, the tenant, the parameters.
func routeAt(t *testing.T, method, path string) (api.Route, string, []string) {
	t.Helper()
	decoded, err := url.PathUnescape(path)
	require.NoError(t, err, path)
	tenant, rest, ok := api.SplitTenantPath(decoded)
	require.True(t, ok, path)
	h, in, _ := lookup(method, rest)
	if h == nil {
		return api.Route{}, tenant, nil
	}
	return in.route, tenant, in.params[:strings.Count(in.route.Pattern, "{")]
}

// TestEveryRoutesPathLeadsBackToIt: the path api.Route.Path builds for each
// route of the table is matched to that route, with its parameters.
func TestEveryRoutesPathLeadsBackToIt(t *testing.T) {
	t.Parallel()
	for _, r := range routes {
		params := []string{"p-1", "order:7"}[:strings.Count(r.Pattern, "{")]
		got, tenant, gotParams := routeAt(t, r.Method, r.Path("acme", params...))
		require.Equal(t, r.Route, got, r.String())
		require.Equal(t, "acme", tenant)
		require.Equal(t, params, gotParams, r.String())
	}
}

// FuzzRoutePathLeadsBackToItsRoute: any tenant and parameters a path can
// carry (not empty, no '/', no dot segment) lead back to the route and
// its values, unless a parameter spells a literal of a more specific
// route at its place (GET jobs/batch is POST jobs/batch's path).
func FuzzRoutePathLeadsBackToItsRoute(f *testing.F) {
	f.Add("acme", "42", "x")
	f.Add("a b", "batch", "skip")
	f.Add("t", "%2F", "ü")
	f.Fuzz(func(t *testing.T, tenant, p1, p2 string) {
		for _, s := range []string{tenant, p1, p2} {
			if s == "" || strings.Contains(s, "/") || s == "." || s == ".." {
				t.Skip("not a path segment")
			}
		}
		for _, r := range routes {
			params := []string{p1, p2}[:strings.Count(r.Pattern, "{")]
			got, gotTenant, gotParams := routeAt(t, r.Method, r.Path(tenant, params...))
			require.Equal(t, tenant, gotTenant)
			if got == r.Route {
				require.Equal(t, params, gotParams, r.String())
				continue
			}
			require.True(t, spellsALiteral(r, params), "%s with %q leads to %s", r.String(), params, got.String())
		}
	})
}

// spellsALiteral says whether a parameter of r is, at its place, a literal
// segment of another route with as many segments.
func spellsALiteral(r routeEntry, params []string) bool {
	n := 0
	for i := 0; i < r.segs.n; i++ {
		if !r.segs.param[i] {
			continue
		}
		for _, o := range routes {
			if o.segs.n == r.segs.n && !o.segs.param[i] && o.segs.s[i] == params[n] {
				return true
			}
		}
		n++
	}
	return false
}
