package api

import (
	"errors"

	"github.com/stile-run/stile/internal/printf"
)

// Code is a stable, machine-readable reason a request was refused:
// clients may switch on it. Every code is declared once, below, with the
// HTTP status it answers (the comment's leading number, read by `go
// generate ./api` into codes_gen.go and into the table of docs/API.md); a
// code marked "stale" is a fence's refusal of a claim that no longer
// holds (errors.Is(err, ErrStale)).
type Code string

// Codes of requests refused before any state was read.
const (
	CodeUnauthorized     Code = "unauthorized"          // 401: the bearer token is missing or wrong
	CodeForbidden        Code = "forbidden"             // 403: the token is valid but its role or tenants do not allow this (the message says what it allows)
	CodeInvalidTenant    Code = "invalid_tenant"        // 400: the tenant name breaks the rule, or the object serves another tenant
	CodeInvalidJSON      Code = "invalid_json"          // 400: the body is not JSON of the expected shape: malformed, an unknown field, a value of the wrong type, data after the object
	CodeInvalidRequest   Code = "invalid_request"       // 400: a field is missing or out of its range (the message names it and the range)
	CodeUnknownKind      Code = "unknown_kind"          // 400: the job kind is not registered in the tenant module (the message lists those that are)
	CodeInvalidArgs      Code = "invalid_args"          // 400: the kind's Validate refused the args (its message follows)
	CodeTooLarge         Code = "too_large"             // 400: args over 1 MiB, output over 512 KiB; event data, command data or a process's state over 1 MiB
	CodeUnknownAggregate Code = "unknown_aggregate"     // 400: no aggregate of that name is registered
	CodeUnknownHandler   Code = "unknown_handler"       // 400: no policy or process of that name is registered
	CodeBodyTimeout      Code = "body_timeout"          // 408: the request body did not arrive within the host's body read timeout (stile dev --body-timeout); nothing was done
	CodeBodyTooLarge     Code = "body_too_large"        // 413: the request body is over 10 MiB
	CodeHeadersTooLarge  Code = "headers_too_large"     // 431: the request's headers (names and values) are over 32 KiB
	CodeUpgradeRequired  Code = "upgrade_required"      // 426: GET /watch is a WebSocket: send it as an upgrade (Connection: Upgrade, Upgrade: websocket)
	CodeNotFound         Code = "not_found"             // 404: no such route, job, schedule, command, projection or query
	CodeMethodNotAllowed Code = "method_not_allowed"    // 405: the route exists for other methods (the Allow header lists them)
	CodeInternal         Code = "internal"              // 500: the module or its host failed; the request was rolled back and wrote nothing
	CodeAnswerLost       Code = "committed_answer_lost" // 500: the request was applied (its transaction committed), then its answer was lost: read the state before retrying
	CodeDecidePanicked   Code = "decide_panicked"       // 500: the aggregate's decide panicked (a bug in the module: its stack is in the host's log); nothing was written
	CodeEventUndecodable Code = "event_undecodable"     // 500: an event of the aggregate's stream does not decode into the Go type the module registers for its type (the message names its seq); nothing was written: deploy a module whose type reads it
)

// Codes of requests refused because of the state they found. Nothing was
// written but, for a refused heartbeat or report, a bounded audit row.
const (
	CodeFinished               Code = "finished"                // 409: cancel of a job that already ended
	CodeNotRetryable           Code = "not_retryable"           // 409: only dead or cancelled jobs can be retried
	CodeNotFinished            Code = "not_finished"            // 409: only finished jobs can be deleted
	CodeUniqueConflict         Code = "unique_conflict"         // 409: a retried job's unique key is held by another live job
	CodeVersionConflict        Code = "version_conflict"        // 409: the stream is not at the expected version (stream and current_version say where it is)
	CodeCommandIDReused        Code = "command_id_reused"       // 409: the command id was applied before with other content
	CodeNotStuck               Code = "not_stuck"               // 409: skip of an event that is not the reaction's first open delivery
	CodeModuleSchedule         Code = "module_schedule"         // 409: the schedule is declared by the tenant module; change it there
	CodeProjectionBehind       Code = "projection_behind"       // 409: the query's projection has not yet applied every event of its types up to min_seq (the message says where it is, and whether it is stalled); ask again, or wait with the client's QueryAtLeast
	CodeCommandRejected        Code = "command_rejected"        // 422: the aggregate's decide refused the command (its error); nothing was written
	CodeImportConflict         Code = "import_conflict"         // 409: an import page that does not fit the tenant: not empty, another import under way, a page out of order, other schema versions, a row its tables refuse
	CodeTxFailed               Code = "tx_failed"               // 422: a registered transaction failed; it wrote nothing
	CodeQueryFailed            Code = "query_failed"            // 422: a registered query's SQL failed with these parameters
	CodeMigrationFailed        Code = "migration_failed"        // 503: a migration the route needs failed (which, and its error); POST /migrations tries it again
	CodeSchemaAhead            Code = "schema_ahead"            // 503: the tenant's schema has a destructive migration this module predates; deploy the newer module
	CodeErased                 Code = "erased"                  // 410: the tenant was erased (DELETE /v1/t/{tenant}); nothing recreates it
	CodeRevocationsUnavailable Code = "revocations_unavailable" // 503: the host cannot read its list of revoked tokens, so it accepts no scoped token until it can (the deployment's secret still works)
	CodeTenantNotFound         Code = "tenant_not_found"        // 404: no tenant of that name: PUT /v1/t/{tenant} creates it, as does a write of a role the deployment lets create tenants
	CodeTenantQuota            Code = "tenant_quota"            // 403: the token's tenant prefix already has as many tenants as the deployment allows one prefix
	CodeRateKeyInUse           Code = "rate_key_in_use"         // 409: DELETE of a rate key the module does not declare while a job not finished yet names it; set another limit with PUT, or cancel its jobs
	CodeTooManyQueues          Code = "too_many_queues"         // 409: the job or paused queue would be the tenant's 1001st distinct queue name (api.MaxQueues); reuse a queue
	CodeReplayUnderWay         Code = "replay_under_way"        // 409: a replay of the reaction is already running (the message names its operation); wait for it to finish
	CodeBudgetExceeded         Code = "budget_exceeded"         // 429: the tenant used its daily budget (GET /usage says which figure); new work waits for Retry-After (the next UTC day), work already started goes on
)

// Codes of the fences: a heartbeat, report or settlement whose claim no
// longer holds. It wrote nothing of what it asked for.
const (
	CodeStaleAttempt    Code = "stale_attempt"    // 409 stale: the attempt is not the job's latest; the job was claimed again since
	CodeOtherWorker     Code = "other_worker"     // 409 stale: the attempt belongs to another worker
	CodeBadToken        Code = "bad_token"        // 409 stale: the lease token does not match the claim
	CodeLeaseExpired    Code = "lease_expired"    // 409 stale: the attempt's lease ran out before this heartbeat or report
	CodeAlreadyReported Code = "already_reported" // 409 stale: the attempt already recorded a different outcome
	CodeClaimTakenOver  Code = "claim_taken_over" // 409 stale: a settlement names a claim that is no longer the delivery's
	CodeUnknownClaim    Code = "unknown_claim"    // 409 stale: a settlement names an event never delivered to the reaction
	CodeOutOfOrder      Code = "out_of_order"     // 409 stale: a success before an earlier open event of the reaction
	CodeAlreadySettled  Code = "already_settled"  // 409 stale: the claim was settled with another outcome
)

// Error is every refusal: the HTTP status, the code and a message a user
// can act on. Its JSON is the body of every non-2xx response; the status
// travels as the HTTP status. It is the one refusal type of Stile: the
// fences, the stores, the module's routes and the client all use it.
type Error struct {
	Status  int    `json:"-"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Stream and CurrentVersion are set by a version_conflict: where the
	// stream is now.
	Stream         string `json:"stream,omitempty"`
	CurrentVersion *int64 `json:"current_version,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// ErrStale matches, with errors.Is, every refusal whose code is a fence's
// (a stale claim): a heartbeat, report or settlement that wrote nothing.
var ErrStale = errors.New("stale claim")

// Is makes errors.Is(err, ErrStale) true for a fence's refusal.
func (e *Error) Is(target error) bool { return target == ErrStale && e.Code.Stale() }

// At returns a copy of e whose message names where, in a batch, the
// refusal is (e.g. "jobs[3]").
func (e *Error) At(where string) *Error {
	c := *e
	c.Message = where + ": " + e.Message
	return &c
}

// Refuse returns the refusal of code with a formatted message; its status
// is the code's.
func Refuse(code Code, format string, args ...any) *Error {
	return &Error{Status: code.Status(), Code: code, Message: printf.Sprintf(format, args...)}
}
