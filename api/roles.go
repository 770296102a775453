package api

import (
	"sort"
	"strings"
)

// Role is what a scoped token may do (package token). The deployment's own
// secret is the admin token.
type Role string

// The roles.
const (
	RoleAdmin    Role = "admin"    // everything
	RoleOperator Role = "operator" // retry, cancel, delete, skip, rebuild, pause, schedules, limits; and read
	RoleWriter   Role = "writer"   // enqueue, commands, appends, transactions; and read
	RoleWorker   Role = "worker"   // claim, heartbeat, report, settle, and read jobs and deliveries
	RoleReader   Role = "reader"   // read
)

// Roles lists the roles, most powerful first.
var Roles = []Role{RoleAdmin, RoleOperator, RoleWriter, RoleWorker, RoleReader}

// RoleList names the roles, for messages.
var RoleList = "admin, operator, writer, worker, reader"

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool {
	for _, x := range Roles {
		if r == x {
			return true
		}
	}
	return false
}

const (
	readers = "admin operator writer worker reader"
	ops     = "admin operator"
	writers = "admin writer"
	workers = "admin worker"
	admins  = "admin"
)

// routeRoles is the one table of which role may call which route
// (docs/SECURITY.md is generated from it; a test calls every cell in
// every host).
var routeRoles = map[Route]string{
	RouteListJobs: readers, RouteGetJob: readers, RouteQueues: readers, RouteLimits: readers, RouteOperations: readers, RouteFailing: readers, RouteGetOperation: readers, RouteRates: readers, RouteGetRate: readers,
	RouteSchedules: readers, RouteGetSchedule: readers, RouteStatus: readers, RouteEvents: readers,
	RouteReadStream: readers, RouteGetCommand: readers, RouteReactions: readers, RouteProjections: readers,
	RouteQuery: readers, RoutePushes: readers, RouteStorage: readers, RouteRetention: readers, RouteUsage: readers, RouteMetrics: readers, RouteWatch: readers,

	RouteEnqueue: writers, RouteEnqueueMany: writers, RouteTx: writers, RouteAppend: writers, RouteCommand: writers,

	RouteClaim: workers, RouteHeartbeat: workers, RouteReport: workers, RouteReportMany: workers,
	RouteClaimEvents: workers, RouteSettle: workers, RoutePushDone: workers,

	RouteAudit: ops,

	RouteMigrate: admins, RouteErase: admins, RouteExport: admins, RouteImport: admins,
	RouteAbortImport: admins,

	RouteCreateTenant: ops,

	RouteDeleteJob: ops, RouteCancel: ops, RouteRetry: ops, RouteSetLimit: ops, RouteStartOp: ops, RouteSetRate: ops, RouteDeleteRate: ops, RoutePutSchedule: ops,
	RouteDelSchedule: ops, RouteSkip: ops, RoutePauseReaction: ops, RouteRebuild: ops, RoutePauseQueue: ops, RoutePutRetention: ops,
	RoutePutBudget: ops, RouteDelBudget: ops,
}

// Audited reports whether r is an operator action, kept in the audit list
// with who took it.
func (r Route) Audited() bool {
	// A tenant's creation is not: the directory keeps when it was first
	// seen, and its audit list would start with a row due for purging.
	return (routeRoles[r] == ops || routeRoles[r] == admins) && r.Method != "GET" && r != RouteCreateTenant
}

// Allows reports whether role may call r.
func (r Route) Allows(role Role) bool {
	for _, x := range strings.Fields(routeRoles[r]) {
		if Role(x) == role {
			return true
		}
	}
	return false
}

// AllowedRoles lists the roles that may call r.
func (r Route) AllowedRoles() []Role {
	var out []Role
	for _, x := range strings.Fields(routeRoles[r]) {
		out = append(out, Role(x))
	}
	return out
}

// Routes are every route of a tenant's API, in the order of their
// patterns: the route table that package runtime dispatches on holds the
// same (a test there checks).
func Routes() []Route {
	out := make([]Route, 0, len(routeRoles))
	for r := range routeRoles {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pattern != out[j].Pattern {
			return out[i].Pattern < out[j].Pattern
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// RoleTable is the route × role table of docs/SECURITY.md, in Markdown.
func RoleTable() string {
	var b strings.Builder
	b.WriteString("| route |")
	for _, r := range Roles {
		b.WriteString(" " + string(r) + " |")
	}
	b.WriteString("\n|---|")
	for range Roles {
		b.WriteString(":-:|")
	}
	b.WriteString("\n")
	for _, rt := range Routes() {
		name := rt.Pattern
		if name == "" {
			name = "(the tenant)"
		}
		b.WriteString("| `" + rt.Method + " " + name + "` |")
		for _, r := range Roles {
			if rt.Allows(r) {
				b.WriteString(" ✓ |")
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
