package api

import "time"

// Push is what a tenant asks of its executors when a commit made work
// ready: the module decides (package runtime), and its transport (the
// Worker's Tenant class, or host.Manager) only delivers. A response frame
// carries it in the stile-push header; the transport sends each id to an
// executor as a PushRequest, outside the storage transaction.
type Push struct {
	Tenant string   `json:"tenant"`
	IDs    []string `json:"ids"`
	// Jobs is how many jobs were ready to claim (counted up to
	// MaxPushCount); Kinds and Reactions name what was ready, as many as
	// fit the header.
	Jobs      int64    `json:"jobs"`
	Kinds     []string `json:"kinds,omitempty"`
	Reactions []string `json:"reactions,omitempty"`
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
type PushDoneResponse struct {
	Ended bool `json:"ended"`
}

// PushStatus lists a tenant's pushes in flight (GET /pushes).
type PushStatus struct {
	InFlight []PushFlight `json:"in_flight"`
	// Pending says work became ready while MaxParallel pushes were in
	// flight: the next push to end starts another.
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
}

// ExecutorPath is where an executor takes pushes, on the Worker that
// serves the API (a service binding from the Tenant class reaches it).
const ExecutorPath = "/__stile/execute"

// MaxPushCount bounds the ready jobs a push counts.
const MaxPushCount = 1000
