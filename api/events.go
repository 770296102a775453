package api

import (
	"encoding/json"
	"time"
)

// Limits of the event log and of reactions.
const (
	MaxEventBytes       = 1 << 20 // one event's JSON data, a command's data, a process's state
	MaxAppendEvents     = 100     // events in one append
	MaxReadEvents       = 1000    // events in one page of a read
	MaxDeliveries       = 100     // deliveries in one reaction claim
	MaxSettlements      = 100     // settlements in one settle request
	MaxSettleCommands   = 64      // commands one settlement dispatches
	MaxSettleScheduled  = 64      // commands one settlement schedules
	MaxSettleDeadlines  = 32      // deadlines one settlement sets or cancels
	MaxReactionTimeout  = time.Hour
	MaxReactionDelay    = 366 * 24 * time.Hour
	MaxStreamBytes      = 2*MaxNameBytes + 1 // "<aggregate>:<id>"
	DeadlineEventPrefix = "stile.deadline:"  // + process name: the type of a process's deadline events
	MaxLagCount         = 100_000            // a reaction's lag is counted up to this
	MaxOpenShown        = 20                 // open deliveries shown per reaction
)

// Names of outcomes, reaction kinds and states on the wire.
const (
	OutcomeSucceeded      = "succeeded" // a settlement's outcomes
	OutcomeDelayed        = "delayed"   // run the handler again after delay_ms, no failure counted
	ReactionKindPolicy    = "policy"    // a reaction without state
	ReactionKindProcess   = "process"   // a reaction with state per correlation id
	InboxPending          = "pending"   // delivered; its claim's lease is out
	InboxRetry            = "retry"     // failed or delayed; runs again at run_at
	InboxReady            = "ready"     // to be delivered again now
	InboxSucceeded        = "succeeded" // settled
	InboxSkipped          = "skipped"   // skipped by an operator
	CommandStateScheduled = "scheduled" // a scheduled command waiting for its time
	CommandStateApplied   = "applied"   // … applied
	CommandStateRejected  = "rejected"  // … refused by its aggregate when due
)

// NewEvent is an event to append.
type NewEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// AppendRequest appends events to a stream (POST /streams/{stream}).
// ExpectedVersion, if set, must be the stream's current version (0: the
// stream must not exist yet).
//
//stile:json DecodeAppend
type AppendRequest struct {
	ExpectedVersion *int64     `json:"expected_version,omitempty"`
	Events          []NewEvent `json:"events"`
}

// AppendResponse says where appended events went.
type AppendResponse struct {
	Stream   string `json:"stream"`
	Version  int64  `json:"version"`
	FirstSeq int64  `json:"first_seq"`
	LastSeq  int64  `json:"last_seq"`
}

// Event is a stored event. Seq numbers the tenant's log without gaps;
// Version numbers its stream from 1.
type Event struct {
	Seq       int64           `json:"seq"`
	Stream    string          `json:"stream"`
	Version   int64           `json:"version"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	CommandID string          `json:"command_id,omitempty"`
	At        time.Time       `json:"at"`
	// Value is Data decoded into the Go type the module registered for
	// Type (runtime.App.RegisterEventTypes), as Evolve and projections see
	// the event; nil for a type it did not register, and on the wire.
	Value any `json:"-"`
}

// EventsResponse is a page of events. Next, when set, is the after= (or
// from_version=) of the next page; Head is the log's last seq.
type EventsResponse struct {
	Events []Event `json:"events"`
	Next   int64   `json:"next,omitempty"`
	Head   int64   `json:"head"`
}

// Command asks an aggregate to decide (POST /commands). ID makes it
// idempotent: a command id already applied is acknowledged, not applied
// again.
//
//stile:json DecodeCommand
type Command struct {
	ID          string          `json:"id"`
	Aggregate   string          `json:"aggregate"`
	AggregateID string          `json:"aggregate_id"`
	Type        string          `json:"type"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// CommandResult is what a command did: the events it appended and the
// jobs it enqueued. Duplicate is set when the id had been applied before;
// the events are then the ones that first application appended.
type CommandResult struct {
	ID        string   `json:"id"`
	Stream    string   `json:"stream"`
	Version   int64    `json:"version"`
	Events    []Event  `json:"events"`
	JobIDs    []string `json:"job_ids,omitempty"`
	Duplicate bool     `json:"duplicate,omitempty"`
}

// ReactionClaimRequest claims deliveries of events to reactions
// (POST /reactions/claims). Handlers empty: every registered reaction.
//
//stile:json DecodeReactionClaim fields
type ReactionClaimRequest struct {
	Worker   string   `json:"worker"`
	Handlers []string `json:"handlers,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	WaitMs   int64    `json:"wait_ms,omitempty"`
	// Push names the push the claim drains for, as ClaimRequest.Push.
	Push string `json:"push,omitempty"`
}

// Delivery is one event handed to one reaction, with the claim its
// settlement must name.
type Delivery struct {
	// Traceparent is the W3C traceparent of the request that appended the
	// event, when it had one: the parent of the handler's span.
	Traceparent    string          `json:"traceparent,omitempty"`
	Handler        string          `json:"handler"`
	Kind           string          `json:"kind"`
	Event          Event           `json:"event"`
	ClaimID        string          `json:"claim_id"`
	Attempt        int64           `json:"attempt"`
	Failures       int64           `json:"failures"`
	TimeoutMs      int64           `json:"timeout_ms"`
	LeaseUntil     time.Time       `json:"lease_until"`
	IdempotencyKey string          `json:"idempotency_key"`
	Correlation    string          `json:"correlation,omitempty"`
	State          json.RawMessage `json:"state,omitempty"`
	LastError      string          `json:"last_error,omitempty"`
	// Replay is how many replays delivered the event to the handler again
	// (0: none); a replayed delivery has an IdempotencyKey of its own.
	Replay int64 `json:"replay,omitempty"`
}

// ReactionClaimResponse carries deliveries, in event order per handler.
//
//stile:json DecodeReactionClaimResponse answer
type ReactionClaimResponse struct {
	Now        time.Time  `json:"now"`
	Deliveries []Delivery `json:"deliveries"`
	// RetryAfterMs: as ClaimResponse.RetryAfterMs.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
}

// ScheduledCommand is a command to apply at a later time.
type ScheduledCommand struct {
	At      time.Time `json:"at"`
	Command Command   `json:"command"`
}

// Deadline is a process deadline: at At, an event of type
// DeadlineEventPrefix+process is delivered to the process.
type Deadline struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}

// Settlement ends one delivery. Outcome succeeded commits, in one
// transaction with the success mark, the commands the handler dispatched,
// the commands it scheduled and, for a process, its new state and
// deadlines. failed records Error and retries after a backoff; delayed
// runs the handler again after DelayMs without counting a failure.
type Settlement struct {
	Handler         string             `json:"handler"`
	Seq             int64              `json:"seq"`
	ClaimID         string             `json:"claim_id"`
	Outcome         string             `json:"outcome"`
	Error           string             `json:"error,omitempty"`
	DelayMs         int64              `json:"delay_ms,omitempty"`
	Commands        []Command          `json:"commands,omitempty"`
	Scheduled       []ScheduledCommand `json:"scheduled,omitempty"`
	State           json.RawMessage    `json:"state,omitempty"`
	Done            bool               `json:"done,omitempty"`
	Deadlines       []Deadline         `json:"deadlines,omitempty"`
	CancelDeadlines []string           `json:"cancel_deadlines,omitempty"`
}

// SettleRequest settles deliveries (POST /reactions/settle). Each is
// fenced and committed on its own: one refused leaves the others.
//
//stile:json DecodeSettle
type SettleRequest struct {
	Settlements []Settlement `json:"settlements"`
}

// SettleResult is one settlement's answer. State is the delivery's inbox
// state afterwards; Error is set when it was refused.
type SettleResult struct {
	Handler   string `json:"handler"`
	Seq       int64  `json:"seq"`
	State     string `json:"state,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Events    int    `json:"events,omitempty"`
	Error     *Error `json:"error,omitempty"`
}

// SettleResponse answers a settle request, in request order.
//
//stile:json DecodeSettleResponse answer
type SettleResponse struct {
	Results []SettleResult `json:"results"`
}

// InboxEntry is a delivery not settled yet, or the last one skipped.
type InboxEntry struct {
	Seq        int64      `json:"seq"`
	State      string     `json:"state"`
	Attempt    int64      `json:"attempt"`
	Failures   int64      `json:"failures"`
	Worker     string     `json:"worker,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	RunAt      *time.Time `json:"run_at,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// ReactionStatus describes one registered reaction: Lag counts the events
// of its types after its checkpoint (up to MaxLagCount), Open its first
// unsettled deliveries.
type ReactionStatus struct {
	Name       string       `json:"name"`
	Kind       string       `json:"kind"`
	Types      []string     `json:"types"`
	TimeoutMs  int64        `json:"timeout_ms"`
	Checkpoint int64        `json:"checkpoint"`
	Lag        int64        `json:"lag"`
	Open       []InboxEntry `json:"open"`
	// Paused: an operator paused the reaction (PUT /reactions/{handler});
	// claims hand out none of its deliveries until it is resumed.
	Paused bool `json:"paused,omitempty"`
}

// ReactionPause pauses or resumes a reaction (PUT /reactions/{handler}):
// its events wait past its checkpoint, appends go on, and nothing of it is
// claimed until it is resumed.
//
//stile:json DecodeReactionPause
type ReactionPause struct {
	Paused bool `json:"paused"`
}

// ReactionsResponse lists the module's reactions (GET /reactions).
type ReactionsResponse struct {
	Head      int64            `json:"head"`
	Reactions []ReactionStatus `json:"reactions"`
}

// SkipRequest skips a delivery that keeps failing (POST
// /reactions/{handler}/skip): it is marked skipped and the handler moves
// on to its next event.
//
//stile:json DecodeSkip
type SkipRequest struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

// DeadlineFired is the data of a process's deadline event.
//
//stile:json DecodeDeadlineFired
type DeadlineFired struct {
	Process     string    `json:"process"`
	Correlation string    `json:"correlation"`
	Name        string    `json:"name"`
	At          time.Time `json:"at"`
}

// ProjectionStatus describes one projection: the generation serving reads
// and, during a rebuild, the one replacing it.
type ProjectionStatus struct {
	Name    string            `json:"name"`
	Types   []string          `json:"types"`
	Head    int64             `json:"head"`
	Live    *GenerationStatus `json:"live,omitempty"`
	Rebuild *GenerationStatus `json:"rebuild,omitempty"`
}

// GenerationStatus is how far a generation has applied the log. Status is
// "current", "catching_up" or "stalled" (at ErrorSeq, retried at RetryAt).
type GenerationStatus struct {
	Generation int64      `json:"generation"`
	Checkpoint int64      `json:"checkpoint"`
	Lag        int64      `json:"lag"`
	Status     string     `json:"status"`
	Failures   int64      `json:"failures,omitempty"`
	Error      string     `json:"error,omitempty"`
	ErrorSeq   int64      `json:"error_seq,omitempty"`
	RetryAt    *time.Time `json:"retry_at,omitempty"`
	Outdated   bool       `json:"outdated,omitempty"`
}

// ProjectionsResponse lists the module's projections (GET /projections).
type ProjectionsResponse struct {
	Projections []ProjectionStatus `json:"projections"`
}

// QueryResult is the answer of a registered query: one object per row,
// with the query's columns as keys. Truncated is set when more rows than
// the query's MaxRows matched.
type QueryResult struct {
	Rows      []json.RawMessage `json:"rows"`
	Truncated bool              `json:"truncated,omitempty"`
	// Projection says how far the projection the query read had applied
	// the event log: rows of a projection that is catching up or stalled
	// lack the effect of the events after its checkpoint. The answer's
	// Projection-Checkpoint and Projection-Status headers say the same.
	Projection *QueryProjection `json:"projection,omitempty"`
}

// QueryProjection is how far the projection a query read had applied the
// event log. Status is "current" (no event of its types waits),
// "catching_up" (PendingFrom is the first that waits), "stalled" (its
// handler failed at ErrorSeq, retried at RetryAt) or "rebuilding" (its
// definition changed: reads see the old generation, frozen, until the
// rebuild replaces it). A query with min_seq
// answers only once no event of its types up to that seq waits
// (409 projection_behind until then).
type QueryProjection struct {
	Name        string     `json:"name"`
	Checkpoint  int64      `json:"checkpoint"`
	Status      string     `json:"status"`
	PendingFrom int64      `json:"pending_from,omitempty"`
	Error       string     `json:"error,omitempty"`
	ErrorSeq    int64      `json:"error_seq,omitempty"`
	RetryAt     *time.Time `json:"retry_at,omitempty"`
}

// MinSeqParam is the query parameter that asks a query's projection to
// have applied every event of its types up to a seq (a command's or an
// append's, say) before the query answers. A query may not name a
// parameter of its own so.
const MinSeqParam = "min_seq"

// Headers of a query's answer: its projection's checkpoint and status
// (QueryProjection).
const (
	HeaderProjectionCheckpoint = "projection-checkpoint"
	HeaderProjectionStatus     = "projection-status"
)
