package api

import (
	"strconv"
	"time"
)

// Push is what a tenant asks of its executors when a commit made work
// ready: the module decides (package runtime), and its transport (the
// Worker's Tenant class, or host.Manager) only delivers. A response frame
// carries it in the stile-push header; the transport sends each id to an
// executor as a PushRequest, outside the storage transaction.
//
//stile:json DecodePush
type Push struct {
	Tenant string   `json:"tenant"`
	IDs    []string `json:"ids"`
	// Jobs is how many jobs were ready to claim (counted up to
	// MaxPushCount); Kinds and Reactions name what was ready, as many as
	// fit the header.
	Jobs      int64    `json:"jobs"`
	Kinds     []string `json:"kinds,omitempty"`
	Reactions []string `json:"reactions,omitempty"`
	// LingerMs is how long the executor may hold a claim once it ran out
	// of work, before it ends the push (the tenant's PushPolicy.Linger).
	LingerMs int64 `json:"linger_ms,omitempty"`
}

// PushRequest is one push, as an executor receives it (POST
// ExecutorPath): run the tenant's ready work, then end the push with
// PushDone.
//
//stile:json DecodePushRequest
type PushRequest struct {
	Tenant    string   `json:"tenant"`
	ID        string   `json:"id"`
	Jobs      int64    `json:"jobs"`
	Kinds     []string `json:"kinds,omitempty"`
	Reactions []string `json:"reactions,omitempty"`
	// LingerMs is how long the executor may hold a claim for more jobs once
	// it ran out of work, before it ends the push: jobs enqueued meanwhile
	// start at once, with no push of their own. 0: it ends at once.
	LingerMs int64 `json:"linger_ms,omitempty"`
}

// Ends of a push (PushDone.End).
const (
	// PushDrained: the executor found no more work it could claim.
	PushDrained = "drained"
	// PushBudgetSpent: the executor stopped with work left, its time or
	// subrequest budget near its end; the tenant pushes again at once.
	PushBudgetSpent = "budget_spent"
	// PushFailed: the transport could not deliver the push (the executor
	// refused it or was unreachable); the tenant retries after a backoff.
	PushFailed = "failed"
)

// PushDone ends a push (POST /pushes/{id}/done).
//
//stile:json DecodePushDone
type PushDone struct {
	End   string `json:"end"`
	Error string `json:"error,omitempty"` // why a push failed
}

// PushDoneResponse says whether the push was still in flight (a push
// ended twice, or after its expiry, answers false and changes nothing).
//
//stile:json DecodePushDoneResponse answer
type PushDoneResponse struct {
	Ended bool `json:"ended"`
}

// PushStatus lists a tenant's pushes in flight (GET /pushes).
type PushStatus struct {
	InFlight []PushFlight `json:"in_flight"`
	// Pending says work became ready that only a claiming or lingering
	// push covers, or that the bounds left waiting: the next push to end
	// looks again.
	Pending bool `json:"pending,omitempty"`
	// RetryAt is when a failed push is retried, if one failed.
	RetryAt  *time.Time `json:"retry_at,omitempty"`
	Failures int64      `json:"failures,omitempty"`
}

// PushFlight is one push in flight.
type PushFlight struct {
	ID        string    `json:"id"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// State is PushStarting, PushClaiming or PushFinishing.
	State string `json:"state"`
}

// States of a push in flight (PushFlight.State): whether work that becomes
// ready needs a push of its own (docs/DESIGN.md, "How are pushes
// scheduled?").
const (
	// PushStarting: its executor has not claimed yet; its first claim
	// sees all the work ready by then.
	PushStarting = "starting"
	// PushClaiming: its last claim took all it asked for and left work:
	// it claims again as its handler slots free up.
	PushClaiming = "claiming"
	// PushFinishing: its claims found nothing more it could take; it only
	// runs what it took. New work gets a push of its own.
	PushFinishing = "finishing"
	// PushLingering: it ran out of work and holds a claim for more, up to
	// its linger: a job that becomes ready is its to take.
	PushLingering = "lingering"
)

// ExecutorPath is where an executor takes pushes, on the Worker that
// serves the API (a service binding from the Tenant class reaches it).
const ExecutorPath = "/__stile/execute"

// PushTokenTTL is how long the worker token a tenant's object sends with
// each push to the edge executor lasts (the executor's calls back carry
// it): longer than any push's work may run on Cloudflare.
const PushTokenTTL = 15 * time.Minute

// MaxPushCount bounds the ready jobs a push counts.
const MaxPushCount = 1000

// TenantsPath lists the deployment's tenants from its directory (GET,
// paged by name; ?ready=true&after_seq=N&wait_ms=M long-polls for tenants
// that became ready after N). It is outside any tenant's API.
const TenantsPath = "/" + Version + "/tenants"

// MaxTenantsPage bounds a page of the directory.
const MaxTenantsPage = 1000

// TenantInfo is one tenant in the directory. A tenant writes to the
// directory on its first use and when it goes from idle to having ready
// work (or back), never on every request: LastSeen is the last of those.
type TenantInfo struct {
	Name      string    `json:"name"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Version is the highest migration of the tenant module's own tables
	// it applied (0: none).
	Version int64 `json:"version"`
	// Ready says the tenant has work a claim may find.
	Ready bool `json:"ready"`
	// Module is the version of the module that last served it (a hash of
	// its bytes), Schema the version of Stile's tables, and Failed a
	// migration that failed there ("3_add_index: its error"), as the
	// tenant last said.
	Module string `json:"module,omitempty"`
	Schema int64  `json:"schema,omitempty"`
	Failed string `json:"failed,omitempty"`
	// Usage is the tenant's usage on the day it last reported, as it
	// recorded it: a tenant reports at most every 5 minutes, and on its
	// first record of a day (GET /v1/t/{tenant}/usage is exact).
	Usage *UsageDay `json:"usage,omitempty"`
}

// TenantsResponse is a page of the directory. Next is the name to pass as
// ?after= for the next page ("" on the last); Seq is the directory's
// change counter, to pass as ?after_seq= to wait for tenants that become
// ready later.
type TenantsResponse struct {
	Tenants []TenantInfo `json:"tenants"`
	Next    string       `json:"next,omitempty"`
	Seq     int64        `json:"seq"`
}

// DirectoryNote is what a tenant's transport tells the directory (the
// stile-directory response header of the module).
//
//stile:json DecodeDirectoryNote
type DirectoryNote struct {
	Tenant  string `json:"tenant"`
	First   bool   `json:"first,omitempty"`
	Ready   bool   `json:"ready"`
	Version int64  `json:"version"`
	// Module, Schema and Failed are as in TenantInfo.
	Module string `json:"module,omitempty"`
	Schema int64  `json:"schema,omitempty"`
	Failed string `json:"failed,omitempty"`
	// VersionsOnly says the note updates the versions and nothing else:
	// Ready is not known, and the directory keeps what it has.
	VersionsOnly bool `json:"versions_only,omitempty"`
	// Erased says the tenant was erased: the directory forgets it.
	Erased bool `json:"erased,omitempty"`
	// Usage is the tenant's usage of a day, as recorded (Day "": the
	// directory keeps what it has).
	Usage UsageDay `json:"usage"`
}

// TenantsQuery is a query of the directory (GET TenantsPath): ?after=
// (names after it), ?limit= (1-1000, default 100), ?ready=true (tenants
// with ready work; with ?after_seq=N, those that became ready after the
// directory's change N) and ?wait_ms= (a ready query that finds nothing
// waits for a tenant to become ready, up to MaxWait).
//
//stile:json -
type TenantsQuery struct {
	After    string
	Limit    int
	Ready    bool
	AfterSeq int64
	WaitMs   int64
}

// ParseTenantsQuery reads a directory query, refusing what is out of range.
func ParseTenantsQuery(q map[string][]string) (TenantsQuery, *Error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	for k, v := range q {
		switch k {
		case "after", "limit", "ready", "after_seq", "wait_ms":
		default:
			return TenantsQuery{}, Refuse(CodeInvalidRequest, "unknown parameter %q: use after, limit, ready, after_seq, wait_ms", k)
		}
		if len(v) > 1 {
			return TenantsQuery{}, Refuse(CodeInvalidRequest, "query parameter %q is given twice", k)
		}
	}
	out := TenantsQuery{After: get("after"), Limit: 100}
	num := func(k string, lo, hi int64) (int64, *Error) {
		s := get(k)
		if s == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < lo || n > hi {
			return 0, Refuse(CodeInvalidRequest, "%s %q is outside %d-%d", k, s, lo, hi)
		}
		return n, nil
	}
	if s := get("limit"); s != "" {
		n, e := num("limit", 1, MaxTenantsPage)
		if e != nil {
			return TenantsQuery{}, e
		}
		out.Limit = int(n)
	}
	switch get("ready") {
	case "", "false":
	case "true":
		out.Ready = true
	default:
		return TenantsQuery{}, Refuse(CodeInvalidRequest, "ready %q is not true or false", get("ready"))
	}
	var e *Error
	if out.AfterSeq, e = num("after_seq", 0, 1<<62); e != nil {
		return TenantsQuery{}, e
	}
	if out.WaitMs, e = num("wait_ms", 0, MaxWait.Milliseconds()); e != nil {
		return TenantsQuery{}, e
	}
	return out, nil
}

// AuditEntry is one operator action (GET /audit): who took it (the role
// and token id the host verified), the route, the path and its answer.
type AuditEntry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Role    Role      `json:"role"`
	TokenID string    `json:"token_id"`
	Route   string    `json:"route"`
	Path    string    `json:"path"`
	Status  int       `json:"status"`
}

// AuditResponse lists operator actions, newest first.
type AuditResponse struct {
	Entries []AuditEntry `json:"entries"`
}

// Erased answers DELETE /v1/t/{tenant}: every row of the tenant is gone,
// and a tombstone answers its later requests with 410.
type Erased struct {
	Tenant   string    `json:"tenant"`
	ErasedAt time.Time `json:"erased_at"`
	// Dropped counts the tables, indexes and triggers removed.
	Dropped int `json:"dropped"`
}
