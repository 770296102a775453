package api

// Route is one operation of a tenant's API: an HTTP method and a path
// pattern under /v1/t/{tenant}/, whose {name} segments are parameters.
// These values are the one definition of the routes: the module's route
// table (package runtime) dispatches on them, and derives its 404s and 405s
// from them, and the Go client builds its paths from them. It is not a
// wire type.
//
//stile:json -
type Route struct {
	Method  string
	Pattern string
}

// The routes of a tenant's API (docs/API.md describes each).
var (
	RouteListJobs     = Route{"GET", "jobs"}
	RouteEnqueue      = Route{"POST", "jobs"}
	RouteEnqueueMany  = Route{"POST", "jobs/batch"}
	RouteGetJob       = Route{"GET", "jobs/{id}"}
	RouteDeleteJob    = Route{"DELETE", "jobs/{id}"}
	RouteHeartbeat    = Route{"POST", "jobs/{id}/heartbeat"}
	RouteReport       = Route{"POST", "jobs/{id}/report"}
	RouteCancel       = Route{"POST", "jobs/{id}/cancel"}
	RouteRetry        = Route{"POST", "jobs/{id}/retry"}
	RouteClaim        = Route{"POST", "claims"}
	RouteReportMany   = Route{"POST", "reports"}
	RouteQueues       = Route{"GET", "queues"}
	RoutePauseQueue   = Route{"PUT", "queues/{queue}"}
	RouteLimits       = Route{"GET", "concurrency"}
	RouteSetLimit     = Route{"PUT", "concurrency/{key}"}
	RouteTx           = Route{"POST", "tx/{name}"}
	RouteSchedules    = Route{"GET", "schedules"}
	RoutePutSchedule  = Route{"PUT", "schedules/{name}"}
	RouteGetSchedule  = Route{"GET", "schedules/{name}"}
	RouteDelSchedule  = Route{"DELETE", "schedules/{name}"}
	RouteStatus       = Route{"GET", "status"}
	RouteEvents       = Route{"GET", "events"}
	RouteReadStream   = Route{"GET", "streams/{stream}"}
	RouteAppend       = Route{"POST", "streams/{stream}"}
	RouteCommand      = Route{"POST", "commands"}
	RouteGetCommand   = Route{"GET", "commands/{id}"}
	RouteReactions    = Route{"GET", "reactions"}
	RouteClaimEvents  = Route{"POST", "reactions/claims"}
	RouteSettle       = Route{"POST", "reactions/settle"}
	RouteSkip         = Route{"POST", "reactions/{handler}/skip"}
	RouteProjections  = Route{"GET", "projections"}
	RouteRebuild      = Route{"POST", "projections/{name}/rebuild"}
	RouteQuery        = Route{"GET", "queries/{name}"}
	RoutePushes       = Route{"GET", "pushes"}
	RoutePushDone     = Route{"POST", "pushes/{id}/done"}
	RouteAudit        = Route{"GET", "audit"}
	RouteStorage      = Route{"GET", "storage"}
	RouteRetention    = Route{"GET", "retention"}
	RoutePutRetention = Route{"PUT", "retention"}
	RouteMigrate      = Route{"POST", "migrations"}
	RouteErase        = Route{"DELETE", ""}
	RouteCreateTenant = Route{"PUT", ""}
	RouteExport       = Route{"GET", "export"}
	RouteImport       = Route{"POST", "import"}
	RouteAbortImport  = Route{"DELETE", "import"}
)

// String is the route as docs/API.md writes it: GET /v1/t/{tenant}/jobs/{id}.
func (r Route) String() string {
	if r.Pattern == "" {
		return r.Method + " /" + Version + "/t/{tenant}"
	}
	return r.Method + " /" + Version + "/t/{tenant}/" + r.Pattern
}
