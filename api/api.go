package api

import (
	"encoding/json"
	"time"
)

// Version is the path prefix of every API route.
const Version = "v1"

// The rows a request read and wrote in its tenant's storage, as the
// Durable Object's storage cursors count them (every index entry and
// trigger write included), with a change of the object's alarm counted as
// a row written: what Cloudflare bills storage by. The Worker sets them on
// every answer the tenant's module gives (not on one the object refuses
// before the module runs, nor on a 500 for a trapped call); a statement
// that fails and the tenant's name, kept once, are not counted. `stile
// dev` sends neither, since local SQLite does not count rows that way.
const (
	HeaderRowsRead    = "Stile-Rows-Read"
	HeaderRowsWritten = "Stile-Rows-Written"
)

// Limits. Requests beyond them are refused with 400 (413 for bodies) and
// change nothing.
const (
	MaxBodyBytes     = 10 << 20 // a request body
	MaxHeaderBytes   = 32 << 10 // a request's headers: their names and values
	MaxArgsBytes     = 1 << 20  // a job's JSON args
	MaxOutputBytes   = 512 << 10
	MaxProgressBytes = 4 << 10  // a heartbeat's progress
	MaxErrorBytes    = 16 << 10 // longer failure messages are truncated, not refused
	MaxBatchJobs     = 1000     // jobs in one enqueue batch
	MaxBatchReports  = 1000     // reports in one batch
	MaxClaim         = 100      // jobs in one claim
	MaxClaimQueues   = 16
	MaxClaimKinds    = 64
	MaxWait          = 60 * time.Second // longest long-poll hold of a claim
	MaxNameBytes     = 128              // kinds, queues, worker ids
	MaxLease         = 24 * time.Hour
	MinLease         = 100 * time.Millisecond
	MaxMaxAttempts   = 1000
	DefaultQueue     = "default"
	// AnyQueue, alone in a claim's queues, claims from every queue that
	// has ready jobs (paused ones excepted): what executors do, so that a
	// kind runs whatever queue the module or the enqueue put it on.
	AnyQueue         = "*"
	DefaultPriority  = 0 // 0 runs first, 9 last
	MaxPriority      = 9
	RejectionsPerJob = 20 // newest refused reports kept per job
	MaxTags          = 32 // tags per job
	MaxTagBytes      = 128
	MaxDependsOn     = 64             // parents per job
	MaxList          = 500            // jobs per page of a listing
	MaxSearchScan    = 10_000         // jobs a search (args., output., tag, error) reads per page
	MaxTimeout       = 24 * time.Hour // a job's time limit
	MaxSnooze        = 366 * 24 * time.Hour
	MaxUniqueWindow  = 366 * 24 * time.Hour
	MaxSlots         = 1_000_000 // slots of a concurrency limit
	// MaxAnswerBytes bounds what a page of jobs, a claim or a page of
	// events carries (their args, output, tags, data), so that a request
	// over rows of the largest sizes the API admits fits the module's
	// memory: the page stops there and says where to continue. A single
	// row always goes, whatever its size.
	MaxAnswerBytes = 4 << 20
	// MaxHeldClaims and MaxHeldClaimsPerToken bound the empty long-poll
	// claims (jobs or deliveries) a tenant's host holds at once, in all
	// and for one token: a claim beyond either is answered at once with
	// what is ready, possibly nothing, and RetryAfterMs (a module may set
	// lower bounds, runtime.App.HeldClaims).
	MaxHeldClaims         = 256
	MaxHeldClaimsPerToken = 64
	// HeldRetryAfter is how long a claim answered at once because too
	// many are held asks its worker to wait before claiming again.
	HeldRetryAfter = time.Second
	// MaxQueues bounds a tenant's distinct queue names (those of its jobs
	// and its paused or resumed queues): an enqueue or import naming one
	// more is refused (too_many_queues) and writes nothing.
	MaxQueues = 1000
)

// JobState mirrors fence.State on the wire.
type JobState = string

// EnqueueRequest is one job to enqueue. Only Kind is required; the rest
// default to the kind's registration.
//
//stile:json DecodeEnqueue fields
type EnqueueRequest struct {
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args,omitempty"`
	Queue       string          `json:"queue,omitempty"`
	Priority    *int            `json:"priority,omitempty"`
	RunAt       *time.Time      `json:"run_at,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	LeaseMs     int64           `json:"lease_ms,omitempty"`
	TimeoutMs   int64           `json:"timeout_ms,omitempty"`
	Tags        []string        `json:"tags,omitempty"`
	// UniqueKey returns the live job with this key instead of a second
	// one; with UniqueWindowMs, also one created that recently, whatever
	// its state.
	UniqueKey      string `json:"unique_key,omitempty"`
	UniqueWindowMs int64  `json:"unique_window_ms,omitempty"`
	// ConcurrencyKey names the limit the job counts against.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// RateKey names the rate limit the job's starts count against (PUT
	// /rates/{key}, or the module's App.RateLimit); a kind's own key when
	// empty.
	RateKey string `json:"rate_key,omitempty"`
	// Debounce collapses the enqueues of its key into one job (see
	// Debounce); Throttle answers them with the first job of its window.
	// Neither goes with the other, UniqueKey, RunAt or DependsOn.
	Debounce *Debounce `json:"debounce,omitempty"`
	Throttle *Throttle `json:"throttle,omitempty"`
	// DependsOn lists parent jobs: ids, or "#n" for the n-th job of the same
	// batch (an earlier one). RunRegardless runs the job even when a parent
	// ends dead or cancelled.
	DependsOn     []string `json:"depends_on,omitempty"`
	RunRegardless bool     `json:"run_regardless,omitempty"`
}

// Debounce collapses enqueues: every enqueue of Key while its job has not
// started moves the job's start to WindowMs after it, never past MaxWaitMs
// after the first (0: no bound), and is answered 200 with that job
// (Existing). Keep says which args the job keeps: "last" (the default),
// "first", or "all" (the args of the last, and every enqueue's args in
// order in the claimed job's AllArgs: nothing is dropped).
type Debounce struct {
	Key       string `json:"key"`
	WindowMs  int64  `json:"window_ms"`
	Keep      string `json:"keep,omitempty"`
	MaxWaitMs int64  `json:"max_wait_ms,omitempty"`
}

// Throttle runs at most one job of Key per window: the first enqueue
// creates it, the others within WindowMs of its creation are answered
// 200 with it (Existing), whatever its state.
type Throttle struct {
	Key      string `json:"key"`
	WindowMs int64  `json:"window_ms"`
}

// EnqueueBatchRequest enqueues many jobs in one transaction: all or none.
//
//stile:json DecodeEnqueueBatch
type EnqueueBatchRequest struct {
	Jobs []EnqueueRequest `json:"jobs"`
}

// EnqueueBatchResponse lists the enqueued jobs in request order.
type EnqueueBatchResponse struct {
	Jobs []Job `json:"jobs"`
}

// Job is a job as the API shows it.
type Job struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Queue    string `json:"queue"`
	Priority int    `json:"priority"`
	// Args are omitted from the answer to an enqueue (you sent them).
	Args        json.RawMessage `json:"args,omitempty"`
	State       JobState        `json:"state"`
	Attempt     int64           `json:"attempt"`
	Failures    int64           `json:"failures"`
	MaxAttempts int64           `json:"max_attempts"`
	LeaseMs     int64           `json:"lease_ms"`
	TimeoutMs   int64           `json:"timeout_ms"`
	RunAt       time.Time       `json:"run_at"`
	CreatedAt   time.Time       `json:"created_at"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	Tags        []string        `json:"tags"`
	// Progress is what the handler last published with a heartbeat in
	// its latest attempt (absent before the first; a new claim clears it).
	Progress json.RawMessage `json:"progress,omitempty"`

	UniqueKey      string `json:"unique_key,omitempty"`
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	RateKey        string `json:"rate_key,omitempty"`
	// DebounceKey, Keep and Collapsed: the job collected the enqueues of
	// its debounce key (how many, and which args it keeps); ThrottleKey:
	// it answers the enqueues of its throttle key within its window.
	DebounceKey    string `json:"debounce_key,omitempty"`
	Keep           string `json:"keep,omitempty"`
	Collapsed      int64  `json:"collapsed,omitempty"`
	ThrottleKey    string `json:"throttle_key,omitempty"`
	PendingParents int64  `json:"pending_parents,omitempty"`
	RunRegardless  bool   `json:"run_regardless,omitempty"`
	// CancelRequestedAt: an operator asked to cancel the running job.
	CancelRequestedAt *time.Time `json:"cancel_requested_at,omitempty"`
	// Existing is set in the answer to an enqueue whose unique key
	// returned this earlier job instead of a new one.
	Existing bool `json:"existing,omitempty"`

	// Running is the attempt in progress, if any.
	Running *Attempt `json:"running,omitempty"`
	// DependsOn lists the job's parents (GET /jobs/{id} only).
	DependsOn []Dependency `json:"depends_on,omitempty"`
	// Attempts and Rejections are filled in by GET /jobs/{id} only.
	Attempts   []Attempt   `json:"attempts,omitempty"`
	Rejections []Rejection `json:"rejections,omitempty"`
	// RanAgain says, in one line, why the job's handler ran more than once,
	// when it did (GET /jobs/{id} only).
	RanAgain string `json:"ran_again,omitempty"`
	// Waiting says, in one line, why a ready job is not running when
	// the tenant knows: its queue is paused, its rate key is at its limit
	// (until when), or no executor handles its kind (GET /jobs/{id} only).
	Waiting string `json:"waiting,omitempty"`
}

// Dependency is a parent of a job and, once it ended, how.
type Dependency struct {
	JobID      string     `json:"job_id"`
	Resolved   string     `json:"resolved,omitempty"` // completed or failed (dead or cancelled)
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// Attempt is one claim of a job and how it ended.
type Attempt struct {
	Attempt    int64      `json:"attempt"`
	Worker     string     `json:"worker"`
	ClaimedAt  time.Time  `json:"claimed_at"`
	LeaseUntil time.Time  `json:"lease_until"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	Outcome    string     `json:"outcome,omitempty"` // completed, failed, lease_expired
	Error      string     `json:"error,omitempty"`
	NoticedBy  string     `json:"noticed_by,omitempty"` // report, alarm, request
	// Heartbeats the attempt sent, and the last one's time.
	Heartbeats      int64      `json:"heartbeats,omitempty"`
	LastHeartbeatAt *time.Time `json:"last_heartbeat_at,omitempty"`
}

// Rejection is a heartbeat or report the fence refused.
type Rejection struct {
	At      time.Time `json:"at"`
	Request string    `json:"request"` // heartbeat or report
	Worker  string    `json:"worker"`
	Attempt int64     `json:"attempt"`
	Outcome string    `json:"outcome,omitempty"`
	Code    Code      `json:"code"`
	Message string    `json:"message"`
}

// ClaimRequest asks for up to Limit ready jobs.
//
//stile:json DecodeClaim fields
type ClaimRequest struct {
	Worker string `json:"worker"`
	// Queues to claim from; default ["default"]; [AnyQueue] for every
	// queue with ready jobs.
	Queues []string `json:"queues,omitempty"`
	Kinds  []string `json:"kinds,omitempty"` // default: every kind
	Limit  int      `json:"limit,omitempty"` // default 1
	// WaitMs > 0 makes an empty claim long-poll: the host holds the request
	// until work arrives or WaitMs passes (at most MaxWait).
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Push names the push (PushRequest.ID) the claim drains for: the
	// tenant learns from it whether the push still claims, or only
	// finishes what it took, and so whether new work needs a push of its
	// own.
	Push string `json:"push,omitempty"`
	// Linger numbers the held claims of a push that ran out of work (with
	// WaitMs): its host asks a held claim again whenever work may have
	// become ready, and a new number tells the tenant a new hold began.
	Linger int64 `json:"linger,omitempty"`
}

// ClaimResponse carries the claimed jobs. Now is the server's clock, so a
// worker can turn LeaseUntil into a local deadline despite clock skew.
//
//stile:json DecodeClaimResponse answer
type ClaimResponse struct {
	Now  time.Time    `json:"now"`
	Jobs []ClaimedJob `json:"jobs"`
	// More says the claim stopped at MaxAnswerBytes with jobs still ready
	// for it: claim again at once rather than waiting.
	More bool `json:"more,omitempty"`
	// RetryAfterMs, on a claim that asked to wait, says it was answered
	// at once rather than held: the tenant (or the claim's token) holds
	// as many claims as it may (MaxHeldClaims). Wait this long before
	// claiming again.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
}

// ClaimedJob is a job handed to a worker: what to run and the claim that a
// heartbeat or report must carry back.
type ClaimedJob struct {
	// Traceparent is the W3C traceparent of the request that enqueued
	// the job, when it had one: the parent of the handler's span.
	Traceparent string          `json:"traceparent,omitempty"`
	ID          string          `json:"id"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Args        json.RawMessage `json:"args"`
	Attempt     int64           `json:"attempt"`
	MaxAttempts int64           `json:"max_attempts"`
	Failures    int64           `json:"failures"`
	LeaseMs     int64           `json:"lease_ms"`
	TimeoutMs   int64           `json:"timeout_ms"`
	LeaseUntil  time.Time       `json:"lease_until"`
	LeaseToken  string          `json:"lease_token"`
	CreatedAt   time.Time       `json:"created_at"`
	Tags        []string        `json:"tags"`
	// AllArgs, for a job debounced with keep "all", are the args of every
	// enqueue it collected, in order (Args are the last).
	AllArgs []json.RawMessage `json:"all_args,omitempty"`
}

// Claim identifies the claim a heartbeat or report speaks for.
type Claim struct {
	Worker     string `json:"worker"`
	Attempt    int64  `json:"attempt"`
	LeaseToken string `json:"lease_token"`
}

// HeartbeatRequest extends the lease of a claim.
//
//stile:json DecodeHeartbeat
type HeartbeatRequest struct {
	Claim
	// Progress, when set, is the handler's progress as a JSON value (at
	// most MaxProgressBytes), kept on the job and sent to its watchers.
	// It is fenced like an output: a refused heartbeat writes none.
	Progress json.RawMessage `json:"progress,omitempty"`
}

// HeartbeatResponse is the extended lease. CancelRequested says an
// operator cancelled the job: stop the handler and report "cancelled"; the
// lease is no longer extended.
//
//stile:json DecodeHeartbeatResponse answer
type HeartbeatResponse struct {
	Now             time.Time `json:"now"`
	LeaseUntil      time.Time `json:"lease_until"`
	CancelRequested bool      `json:"cancel_requested,omitempty"`
}

// Report outcomes.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeSnoozed   = "snoozed"
)

// ReportRequest records how an attempt ended.
//
//stile:json DecodeReport
type ReportRequest struct {
	Claim
	Outcome string          `json:"outcome"`          // completed, failed, cancelled or snoozed
	Output  json.RawMessage `json:"output,omitempty"` // completed only
	Error   string          `json:"error,omitempty"`  // failed or cancelled
	// Final, with failed: do not retry; the job ends dead.
	Final bool `json:"final,omitempty"`
	// SnoozeMs, with snoozed: run again after this long, without spending
	// the retry budget.
	SnoozeMs int64 `json:"snooze_ms,omitempty"`
	// Tags are added to the job's tags, with the outcome only.
	Tags []string `json:"tags,omitempty"`
}

// ReportResponse is where the job stands after the report: completed,
// retryable (RunAt is when it may run again) or dead. Duplicate is true when
// the same claim had already recorded the same outcome (a retried request):
// nothing was written this time. GET /jobs/{id} has the whole job.
//
//stile:json DecodeReportResponse answer
type ReportResponse struct {
	JobID     string    `json:"job_id"`
	State     JobState  `json:"state"`
	Attempt   int64     `json:"attempt"`
	Failures  int64     `json:"failures"`
	RunAt     time.Time `json:"run_at"`
	Duplicate bool      `json:"duplicate,omitempty"`
	// Kind is the job's kind, and AttemptMs how long the attempt ran from
	// its claim to this report, by the tenant's clock (not on a
	// duplicate: the attempt had ended).
	Kind      string `json:"kind,omitempty"`
	AttemptMs int64  `json:"attempt_ms,omitempty"`
}

// BatchReport is one report of a batch, naming its job.
type BatchReport struct {
	JobID string `json:"job_id"`
	ReportRequest
}

// BatchReportRequest records many outcomes in one transaction, each fenced
// on its own.
//
//stile:json DecodeReportBatch
type BatchReportRequest struct {
	Reports []BatchReport `json:"reports"`
}

// BatchReportResult is the outcome of one report of a batch: Error is nil
// when it was recorded (or was a duplicate).
type BatchReportResult struct {
	JobID     string `json:"job_id"`
	State     string `json:"state,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Kind      string `json:"kind,omitempty"`       // as in ReportResponse
	AttemptMs int64  `json:"attempt_ms,omitempty"` // as in ReportResponse
	Error     *Error `json:"error,omitempty"`
}

// BatchReportResponse lists results in request order.
//
//stile:json DecodeBatchReportResponse answer
type BatchReportResponse struct {
	Results []BatchReportResult `json:"results"`
}

// Status describes a tenant.
type Status struct {
	Tenant        string     `json:"tenant"`
	Now           time.Time  `json:"now"`
	SchemaVersion int64      `json:"schema_version"`
	AlarmAt       *time.Time `json:"alarm_at,omitempty"`
	// MigrationDrift lists applied migrations whose SQL the module changed
	// since: they are not run again.
	MigrationDrift []string `json:"migration_drift,omitempty"`
	// Module is the version of the module serving (a hash its host
	// computed from the module's bytes; absent from hosts that run Go
	// natively).
	Module string `json:"module,omitempty"`
	// StileSchema and ModuleSchema are Stile's tables and the module's own.
	StileSchema  SchemaState `json:"stile_schema"`
	ModuleSchema SchemaState `json:"module_schema"`
	// Kinds and Reactions are what the module serving registers: its job
	// kinds (by name) and its policies and processes (in registration
	// order), which handlers must run.
	Kinds     []ModuleKind     `json:"kinds,omitempty"`
	Reactions []ModuleReaction `json:"reactions,omitempty"`
}

// ModuleKind is a job kind a module registers (Status).
type ModuleKind struct {
	Name  string `json:"name"`
	Queue string `json:"queue"`
}

// ModuleReaction is a reaction a module registers (Status): Kind is
// ReactionKindPolicy or ReactionKindProcess.
type ModuleReaction struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// SchemaState is one ledger of migrations in GET /status and
// POST /migrations.
type SchemaState struct {
	// Version is the highest migration applied; Known is this module's.
	Version int64 `json:"version"`
	Known   int64 `json:"known"`
	// Applied counts the migrations this request applied.
	Applied int `json:"applied,omitempty"`
	// Failed is the migration that failed (the routes that need it answer
	// 503 migration_failed).
	Failed *MigrationFailure `json:"failed,omitempty"`
	// Ahead lists applied migrations this module does not know: it serves
	// over them when all are additive.
	Ahead []MigrationAhead `json:"ahead,omitempty"`
}

// MigrationFailure is a migration that failed and was rolled back.
type MigrationFailure struct {
	Version  int64     `json:"version"`
	Name     string    `json:"name"`
	Error    string    `json:"error"`
	At       time.Time `json:"at"`
	Attempts int64     `json:"attempts"`
}

// MigrationAhead is an applied migration the module does not know, with
// its class (additive or destructive).
type MigrationAhead struct {
	Version int64  `json:"version"`
	Name    string `json:"name"`
	Class   string `json:"class"`
}

// CancelRequest cancels a job (POST /jobs/{id}/cancel). The body may be
// empty.
//
//stile:json decode
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ListResponse is a page of jobs; Next, if set, is the after= of the next
// page.
type ListResponse struct {
	Jobs []Job  `json:"jobs"`
	Next string `json:"next,omitempty"`
}

// QueueCounts counts a queue's unfinished jobs by state.
type QueueCounts struct {
	Queue  string           `json:"queue"`
	Counts map[string]int64 `json:"counts"`
	// OldestReadyAt is when the queue's oldest ready job became due: its
	// backlog has waited since.
	OldestReadyAt *time.Time `json:"oldest_ready_at,omitempty"`
	// Unhandled lists kinds of the queue's ready jobs that no executor
	// handles: claims came since the tenant's instance started, and none
	// named them (counted among the first MaxPushCount ready jobs).
	Unhandled []string `json:"unhandled,omitempty"`
}

// QueuesResponse counts unfinished jobs per queue, and finished ones per
// state across queues.
type QueuesResponse struct {
	Queues   []QueueCounts    `json:"queues"`
	Finished map[string]int64 `json:"finished"`
	// Paused lists the queues an operator paused.
	Paused []string `json:"paused,omitempty"`
}

// QueuePause pauses or resumes a queue (PUT /queues/{queue}): claims take
// no job from a paused queue; its jobs wait, and enqueues go on.
//
//stile:json DecodeQueuePause
type QueuePause struct {
	Paused bool `json:"paused"`
}

// QueueState is a queue's pause, as PUT /queues/{queue} answers it.
type QueueState struct {
	Queue  string `json:"queue"`
	Paused bool   `json:"paused"`
}

// Limit is a concurrency limit: at most Slots jobs with its key run at once.
type Limit struct {
	Key   string `json:"key"`
	Slots int64  `json:"slots"`
	InUse int64  `json:"in_use"`
}

// SetLimitRequest sets a limit (PUT /concurrency/{key}).
//
//stile:json DecodeSetLimit
type SetLimitRequest struct {
	Slots *int64 `json:"slots"`
}

// LimitsResponse lists the limits.
type LimitsResponse struct {
	Limits []Limit `json:"limits"`
}

// FailingResponse is what is failing in a tenant now (GET /failing):
// jobs retrying or dead grouped by kind, state and error, reactions with
// failing deliveries, projections stalled. Jobs are read from the newest
// MaxFailingScan of each state: Truncated says there were more.
type FailingResponse struct {
	Jobs        []FailingJobs       `json:"jobs"`
	Reactions   []FailingReaction   `json:"reactions"`
	Projections []FailingProjection `json:"projections"`
	Truncated   bool                `json:"truncated,omitempty"`
}

// FailingJobs is a group of failing jobs: one kind, one state (retryable
// or dead), one error (numbers in it made # so that "job 12 timed out" and
// "job 13 timed out" group together; Example is one as it was).
type FailingJobs struct {
	Kind      string    `json:"kind"`
	State     string    `json:"state"`
	Error     string    `json:"error"`
	Example   string    `json:"example"`
	Count     int64     `json:"count"`
	FirstAt   time.Time `json:"first_at"`
	LastAt    time.Time `json:"last_at"`
	LatestJob string    `json:"latest_job"`
}

// FailingReaction is a reaction whose open deliveries failed.
type FailingReaction struct {
	Name    string `json:"name"`
	Failing int64  `json:"failing"`
	Seq     int64  `json:"seq"`
	Error   string `json:"error"`
}

// FailingProjection is a projection whose live generation is stalled.
type FailingProjection struct {
	Name     string `json:"name"`
	ErrorSeq int64  `json:"error_seq"`
	Error    string `json:"error"`
}

// MaxFailingScan bounds the jobs of each failing state GET /failing reads.
const MaxFailingScan = 10_000

// OperationRequest starts a bulk operation (POST /operations): Action
// ("retry", "cancel" or "delete") on every job Filter finds, where Filter
// is the query of GET /jobs (state, queue, kind, args.<path>, output.<path>,
// args, output, tag, error), e.g. "state=dead&kind=email.send".
//
// Action "replay" (without a filter) hands Reaction every event from
// FromSeq on that it already handled again, in event order, as new
// deliveries (docs/GUARANTEES.md says what that means for its outcomes).
//
//stile:json DecodeOperation
type OperationRequest struct {
	Action   string `json:"action"`
	Filter   string `json:"filter,omitempty"`
	Reaction string `json:"reaction,omitempty"`
	FromSeq  int64  `json:"from_seq,omitempty"`
}

// Operation is a bulk operation and its progress. The alarm runs it in
// slices, each one transaction: Matched jobs found so far, Done taken by
// the action, Skipped refused by it (LastSkip says why, for the latest:
// a job that finished meanwhile, say). State is "running" or "done".
//
// A replay counts deliveries: Matched those of Reaction from FromSeq up to
// UntilSeq (its checkpoint when the replay started) found so far, Done
// those opened again, Skipped those still open (delivered once, not
// twice).
type Operation struct {
	ID        string     `json:"id"`
	Action    string     `json:"action"`
	Filter    string     `json:"filter"`
	Reaction  string     `json:"reaction,omitempty"`
	FromSeq   int64      `json:"from_seq,omitempty"`
	UntilSeq  int64      `json:"until_seq,omitempty"`
	State     string     `json:"state"`
	Matched   int64      `json:"matched"`
	Done      int64      `json:"done"`
	Skipped   int64      `json:"skipped"`
	LastSkip  string     `json:"last_skip,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	DoneAt    *time.Time `json:"done_at,omitempty"`
}

// OperationsResponse lists the newest operations.
type OperationsResponse struct {
	Operations []Operation `json:"operations"`
}

// Rate is a rate limit: at most Limit jobs with its key start in any
// window of PeriodMs milliseconds (a start is a claim: an attempt).
type Rate struct {
	Key      string `json:"key"`
	Limit    int64  `json:"limit"`
	PeriodMs int64  `json:"period_ms"`
	// Source is who set it: "module" (the module's default) or "tenant"
	// (PUT /rates/{key}; DELETE goes back to the module's default).
	Source string `json:"source"`
	// InWindow counts the starts in the window that ends now; OpenAt,
	// when the key is at its limit, is when its next start is allowed.
	InWindow int64      `json:"in_window"`
	OpenAt   *time.Time `json:"open_at,omitempty"`
	// Started counts the key's starts ever; Limited the times its jobs
	// had to wait for room.
	Started int64 `json:"started"`
	Limited int64 `json:"limited"`
}

// SetRateRequest sets a rate limit (PUT /rates/{key}).
//
//stile:json DecodeSetRate
type SetRateRequest struct {
	Limit    *int64 `json:"limit"`
	PeriodMs *int64 `json:"period_ms"`
}

// RatesResponse lists the rate limits.
type RatesResponse struct {
	Rates []Rate `json:"rates"`
}

// ScheduleRequest creates or replaces a schedule (PUT /schedules/{name}):
// each period of Cron enqueues Job. Job takes the fields of an enqueue but
// run_at, depends_on, unique keys (each period is its own unique key),
// debounce or throttle.
//
//stile:json DecodeSchedule
type ScheduleRequest struct {
	Cron   string         `json:"cron"`
	Job    EnqueueRequest `json:"job"`
	Paused bool           `json:"paused,omitempty"`
}

// Schedule is a periodic job.
type Schedule struct {
	Name      string          `json:"name"`
	Cron      string          `json:"cron"`
	Job       json.RawMessage `json:"job"`
	Paused    bool            `json:"paused,omitempty"`
	NextAt    time.Time       `json:"next_at"`
	LastAt    *time.Time      `json:"last_at,omitempty"`
	LastJobID string          `json:"last_job_id,omitempty"`
	LastError string          `json:"last_error,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// Module says the tenant module declared the schedule (for every
	// tenant): it cannot be replaced or deleted per tenant.
	Module bool `json:"module,omitempty"`
}

// SchedulesResponse lists schedules.
type SchedulesResponse struct {
	Schedules []Schedule `json:"schedules"`
}

// TxResult is the answer of a registered transaction: its output.
type TxResult struct {
	Result json.RawMessage `json:"result"`
}
