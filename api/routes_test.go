package api_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

func TestRoutePathFillsThePattern(t *testing.T) {
	for _, tc := range []struct {
		route  api.Route
		tenant string
		params []string
		path   string
	}{
		{api.RouteErase, "acme", nil, "/v1/t/acme"},
		{api.RouteListJobs, "acme", nil, "/v1/t/acme/jobs"},
		{api.RouteEnqueueMany, "acme", nil, "/v1/t/acme/jobs/batch"},
		{api.RouteReport, "acme", []string{"42"}, "/v1/t/acme/jobs/42/report"},
		{api.RoutePushDone, "a-b", []string{"p 1/2"}, "/v1/t/a-b/pushes/p%201%2F2/done"},
		{api.RouteReadStream, "acme", []string{"order:7"}, "/v1/t/acme/streams/order:7"},
		{api.RouteQuery, "ac/me?", []string{"a;b,c"}, "/v1/t/ac%2Fme%3F/queries/a%3Bb%2Cc"},
	} {
		require.Equal(t, tc.path, tc.route.Path(tc.tenant, tc.params...), tc.route.String())
	}
}

func TestRoutePathRefusesTheWrongParameterCount(t *testing.T) {
	require.PanicsWithValue(t, "api: too few parameters for POST /v1/t/{tenant}/jobs/{id}/report", func() { api.RouteReport.Path("acme") })
	require.PanicsWithValue(t, "api: too many parameters for GET /v1/t/{tenant}/jobs", func() { api.RouteListJobs.Path("acme", "1") })
}

// FuzzRoutePathEscapesAsPathEscape: a tenant and a parameter are escaped
// as url.PathEscape escapes a segment.
func FuzzRoutePathEscapesAsPathEscape(f *testing.F) {
	for _, s := range []string{"acme", "a b", "a/b", "?#%", "ü", "$&+,/:;=?@", "!'()*[]", "\x00\x7f\xff"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, tenant, id string) {
		require.Equal(t, "/v1/t/"+url.PathEscape(tenant)+"/jobs/"+url.PathEscape(id)+"/report", api.RouteReport.Path(tenant, id))
	})
}
