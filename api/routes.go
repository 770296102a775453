package api

import "strings"

// Route is one operation of a tenant's API: an HTTP method and a path
// pattern under /v1/t/{tenant}/, whose {name} segments are parameters.
// These values are the one definition of the routes: the module's route
// table (package runtime) dispatches on them, and derives its 404s and 405s
// from them, and Path builds every tenant path the Go code sends (the
// client, the hosts, the bench) from them. It is not a wire type.
//
//stile:json -
type Route struct {
	Method  string
	Pattern string
}

// MaxMetricKinds bounds the job kinds metrics label, the host's /metrics
// and a tenant's GET /metrics alike: the others are counted as
// OtherMetricKind.
const MaxMetricKinds = 100

// OtherMetricKind labels the jobs of every kind past MaxMetricKinds.
const OtherMetricKind = "other"

// MetricsContentType is the content type of a tenant's GET /metrics: the
// Prometheus text exposition format.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// The routes of a tenant's API (docs/API.md describes each).
var (
	RouteListJobs      = Route{"GET", "jobs"}
	RouteEnqueue       = Route{"POST", "jobs"}
	RouteEnqueueMany   = Route{"POST", "jobs/batch"}
	RouteGetJob        = Route{"GET", "jobs/{id}"}
	RouteDeleteJob     = Route{"DELETE", "jobs/{id}"}
	RouteHeartbeat     = Route{"POST", "jobs/{id}/heartbeat"}
	RouteReport        = Route{"POST", "jobs/{id}/report"}
	RouteCancel        = Route{"POST", "jobs/{id}/cancel"}
	RouteRetry         = Route{"POST", "jobs/{id}/retry"}
	RouteClaim         = Route{"POST", "claims"}
	RouteReportMany    = Route{"POST", "reports"}
	RouteQueues        = Route{"GET", "queues"}
	RoutePauseQueue    = Route{"PUT", "queues/{queue}"}
	RouteLimits        = Route{"GET", "concurrency"}
	RouteSetLimit      = Route{"PUT", "concurrency/{key}"}
	RouteFailing       = Route{"GET", "failing"}
	RouteOperations    = Route{"GET", "operations"}
	RouteStartOp       = Route{"POST", "operations"}
	RouteGetOperation  = Route{"GET", "operations/{id}"}
	RouteRates         = Route{"GET", "rates"}
	RouteGetRate       = Route{"GET", "rates/{key}"}
	RouteSetRate       = Route{"PUT", "rates/{key}"}
	RouteDeleteRate    = Route{"DELETE", "rates/{key}"}
	RouteTx            = Route{"POST", "tx/{name}"}
	RouteSchedules     = Route{"GET", "schedules"}
	RoutePutSchedule   = Route{"PUT", "schedules/{name}"}
	RouteGetSchedule   = Route{"GET", "schedules/{name}"}
	RouteDelSchedule   = Route{"DELETE", "schedules/{name}"}
	RouteStatus        = Route{"GET", "status"}
	RouteEvents        = Route{"GET", "events"}
	RouteReadStream    = Route{"GET", "streams/{stream}"}
	RouteAppend        = Route{"POST", "streams/{stream}"}
	RouteCommand       = Route{"POST", "commands"}
	RouteGetCommand    = Route{"GET", "commands/{id}"}
	RouteReactions     = Route{"GET", "reactions"}
	RouteClaimEvents   = Route{"POST", "reactions/claims"}
	RouteSettle        = Route{"POST", "reactions/settle"}
	RouteSkip          = Route{"POST", "reactions/{handler}/skip"}
	RoutePauseReaction = Route{"PUT", "reactions/{handler}"}
	RouteProjections   = Route{"GET", "projections"}
	RouteRebuild       = Route{"POST", "projections/{name}/rebuild"}
	RouteQuery         = Route{"GET", "queries/{name}"}
	RoutePushes        = Route{"GET", "pushes"}
	RoutePushDone      = Route{"POST", "pushes/{id}/done"}
	RouteAudit         = Route{"GET", "audit"}
	RouteStorage       = Route{"GET", "storage"}
	RouteRetention     = Route{"GET", "retention"}
	RoutePutRetention  = Route{"PUT", "retention"}
	RouteUsage         = Route{"GET", "usage"}
	RouteMetrics       = Route{"GET", "metrics"}
	RouteWatch         = Route{"GET", "watch"}
	RoutePutBudget     = Route{"PUT", "budget"}
	RouteDelBudget     = Route{"DELETE", "budget"}
	RouteMigrate       = Route{"POST", "migrations"}
	RouteErase         = Route{"DELETE", ""}
	RouteCreateTenant  = Route{"PUT", ""}
	RouteExport        = Route{"GET", "export"}
	RouteImport        = Route{"POST", "import"}
	RouteAbortImport   = Route{"DELETE", "import"}
)

// String is the route as docs/API.md writes it: GET /v1/t/{tenant}/jobs/{id}.
func (r Route) String() string {
	if r.Pattern == "" {
		return r.Method + " /" + Version + "/t/{tenant}"
	}
	return r.Method + " /" + Version + "/t/{tenant}/" + r.Pattern
}

// Path is the route's path for tenant: /v1/t/{tenant}/ and the pattern,
// each {parameter} filled in order by params, the tenant and every
// parameter escaped as a path segment (as url.PathEscape does; the router
// matches the path its transport decoded). It panics when params do not
// fill the pattern's parameters exactly: the caller names the route.
func (r Route) Path(tenant string, params ...string) string {
	b := make([]byte, 0, len("/"+Version+"/t/")+len(tenant)+1+len(r.Pattern)+8*len(params))
	b = append(b, "/"+Version+"/t/"...)
	b = appendSegment(b, tenant)
	for pattern := r.Pattern; pattern != ""; {
		var seg string
		seg, pattern, _ = strings.Cut(pattern, "/")
		b = append(b, '/')
		if !IsParam(seg) {
			b = append(b, seg...)
			continue
		}
		if len(params) == 0 {
			panic("api: too few parameters for " + r.String())
		}
		b, params = appendSegment(b, params[0]), params[1:]
	}
	if len(params) > 0 {
		panic("api: too many parameters for " + r.String())
	}
	return string(b)
}

// IsParam says whether a pattern's segment is a {parameter}: the one rule
// the path builder and the module's router share.
func IsParam(seg string) bool { return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' }

// appendSegment appends s escaped as one path segment, byte for byte as
// url.PathEscape escapes it (net/url is not linked into the module).
func appendSegment(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if segmentByte(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return b
}

// segmentByte says whether c stands for itself in a path segment: the
// unreserved characters of RFC 3986 and the reserved ones url.PathEscape
// leaves.
func segmentByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '~', '$', '&', '+', '=', ':', '@':
		return true
	}
	return false
}
