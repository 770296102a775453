package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/api/internal/apigen"
)

// The generated file is what the generator makes of the types now: a
// field added without go generate ./api fails here.
func TestGeneratedCodeIsFresh(t *testing.T) {
	t.Parallel()
	want, err := apigen.Generate(".")
	require.NoError(t, err)
	got, err := os.ReadFile(apigen.Output)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "api/%s is stale: run go generate ./api", apigen.Output)
}

var (
	fxAt    = time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	fxLater = fxAt.Add(time.Hour)
	fxInt   = 7
	fxInt64 = int64(8)
	fxRaw   = json.RawMessage(`{"a":[1,"\u2028",null]}`)
	fxErr   = &api.Error{Code: "c", Message: "m<&>\n", Stream: "s", CurrentVersion: &fxInt64}
)

func fxEnqueue() api.EnqueueRequest {
	return api.EnqueueRequest{Kind: "k\"é", Args: fxRaw, Queue: "q", Priority: &fxInt, RunAt: &fxAt, MaxAttempts: 3,
		LeaseMs: 1000, TimeoutMs: 5000, Tags: []string{"t1", "t2"}, UniqueKey: "u", UniqueWindowMs: 60000,
		ConcurrencyKey: "ck", RateKey: "rk", DependsOn: []string{"#0", "12"}, RunRegardless: true,
		Debounce: &api.Debounce{Key: "d", WindowMs: 100, Keep: "all", MaxWaitMs: 500}, Throttle: &api.Throttle{Key: "t", WindowMs: 100}}
}

func fxAttempt() api.Attempt {
	return api.Attempt{Attempt: 1, Worker: "w", ClaimedAt: fxAt, LeaseUntil: fxLater, EndedAt: &fxLater,
		Outcome: "failed", Error: "x", NoticedBy: "report", Heartbeats: 3, LastHeartbeatAt: &fxAt}
}

func fxJob() api.Job {
	run := fxAttempt()
	return api.Job{ID: "1", Kind: "k\\\t\x01", Queue: "q", Priority: 2, Args: fxRaw, State: "completed", Attempt: 2,
		Failures: 1, MaxAttempts: 5, LeaseMs: 100, TimeoutMs: 200, RunAt: fxAt, CreatedAt: fxAt, FinishedAt: &fxLater,
		Output: json.RawMessage(`"out"`), LastError: "e", Tags: []string{"a"}, UniqueKey: "u", ConcurrencyKey: "ck", RateKey: "rk",
		DebounceKey: "d", Keep: "all", Collapsed: 3, ThrottleKey: "t", PendingParents: 2, RunRegardless: true, CancelRequestedAt: &fxLater, Existing: true, Running: &run, Progress: json.RawMessage(`{"done":1}`),
		DependsOn:  []api.Dependency{fxDependency()},
		Attempts:   []api.Attempt{fxAttempt()},
		Rejections: []api.Rejection{fxRejection()}, RanAgain: "ran 2 times: …", Waiting: "its queue q is paused"}
}

func fxDependency() api.Dependency {
	return api.Dependency{JobID: "1", Resolved: "completed", ResolvedAt: &fxAt}
}

func fxRejection() api.Rejection {
	return api.Rejection{At: fxAt, Request: "report", Worker: "v", Attempt: 1, Outcome: "completed",
		Code: "stale_attempt", Message: "m"}
}

func fxClaimedJob() api.ClaimedJob {
	return api.ClaimedJob{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ID: "1", Kind: "k", Queue: "q", Args: fxRaw, Attempt: 1, MaxAttempts: 2, Failures: 3,
		LeaseMs: 4, TimeoutMs: 5, LeaseUntil: fxLater, LeaseToken: "tok", CreatedAt: fxAt, Tags: []string{"t"},
		AllArgs: []json.RawMessage{fxRaw, json.RawMessage(`[1,{"a":null}]`)}}
}

func fxClaim() api.Claim { return api.Claim{Worker: "w", Attempt: 2, LeaseToken: "tok"} }

func fxReport() api.ReportRequest {
	return api.ReportRequest{Claim: fxClaim(), Outcome: "failed", Output: fxRaw, Error: "boom\n", Final: true,
		SnoozeMs: 10, Tags: []string{"t"}}
}

func fxSchedule() api.Schedule {
	return api.Schedule{Name: "s", Cron: "@hourly", Job: json.RawMessage(`{"kind":"k"}`), Paused: true, NextAt: fxLater,
		LastAt: &fxAt, LastJobID: "7", LastError: "e", CreatedAt: fxAt, UpdatedAt: fxLater, Module: true}
}

func fxEvent() api.Event {
	return api.Event{Seq: 1, Stream: "order:o-1", Version: 2, Type: "placed", Data: fxRaw, CommandID: "c1", At: fxAt}
}

func fxCommand() api.Command {
	return api.Command{ID: "c\"1", Aggregate: "order", AggregateID: "o-é", Type: "place", Data: fxRaw}
}

func fxDelivery() api.Delivery {
	return api.Delivery{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Handler: "h", Kind: api.ReactionKindProcess, Event: fxEvent(), ClaimID: "claim", Attempt: 2,
		Failures: 1, TimeoutMs: 30000, LeaseUntil: fxLater, IdempotencyKey: "key", Correlation: "order-1",
		State: json.RawMessage(`{"step":2}`), LastError: "boom", Replay: 1}
}

func fxSettlement() api.Settlement {
	return api.Settlement{Handler: "h", Seq: 3, ClaimID: "c", Outcome: "succeeded", Error: "e", DelayMs: 5,
		Commands:  []api.Command{fxCommand()},
		Scheduled: []api.ScheduledCommand{{At: fxAt, Command: fxCommand()}},
		State:     json.RawMessage(`[true]`), Done: true, Deadlines: []api.Deadline{{Name: "d", At: fxLater}},
		CancelDeadlines: []string{"old"}}
}

func fxSettleResult() api.SettleResult {
	return api.SettleResult{Handler: "h", Seq: 7, State: api.InboxRetry, Duplicate: true, Events: 3, Error: fxErr}
}

func fxInbox() api.InboxEntry {
	return api.InboxEntry{Seq: 5, State: api.InboxRetry, Attempt: 3, Failures: 2, Worker: "w", LeaseUntil: &fxAt,
		RunAt: &fxLater, Error: "e"}
}

func fxReaction() api.ReactionStatus {
	return api.ReactionStatus{Name: "p", Kind: api.ReactionKindProcess, Types: []string{"a", "b"}, TimeoutMs: 1,
		Checkpoint: 2, Lag: 3, Open: []api.InboxEntry{fxInbox()}, Paused: true}
}

func fxGeneration() *api.GenerationStatus {
	return &api.GenerationStatus{Generation: 1, Checkpoint: 2, Lag: 3, Status: "stalled", Failures: 4, Error: "e",
		ErrorSeq: 5, RetryAt: &fxLater, Outdated: true}
}

func fxQueryProjection() *api.QueryProjection {
	return &api.QueryProjection{Name: "p", Checkpoint: 2, Status: "stalled", PendingFrom: 3, Error: "e", ErrorSeq: 3, RetryAt: &fxLater}
}

func fxProjection() api.ProjectionStatus {
	return api.ProjectionStatus{Name: "p", Types: []string{"a"}, Head: 9, Live: fxGeneration(), Rebuild: fxGeneration()}
}

// fixtures holds a value of every wire type with every field set.
var fixtures = map[string]any{
	"Error":                api.Error{Code: "c", Message: "m", Stream: "s", CurrentVersion: &fxInt64},
	"EnqueueRequest":       fxEnqueue(),
	"EnqueueBatchRequest":  api.EnqueueBatchRequest{Jobs: []api.EnqueueRequest{fxEnqueue(), fxEnqueue()}},
	"EnqueueBatchResponse": api.EnqueueBatchResponse{Jobs: []api.Job{fxJob()}},
	"Job":                  fxJob(),
	"Dependency":           fxDependency(),
	"Attempt":              fxAttempt(),
	"Rejection":            fxRejection(),
	"ClaimRequest":         api.ClaimRequest{Worker: "w", Queues: []string{"a"}, Kinds: []string{"k"}, Limit: 3, WaitMs: 4, Push: "p1", Linger: 2},
	"ClaimResponse":        api.ClaimResponse{Now: fxAt, Jobs: []api.ClaimedJob{fxClaimedJob()}, More: true, RetryAfterMs: 1000},
	"ClaimedJob":           fxClaimedJob(),
	"Claim":                fxClaim(),
	"HeartbeatRequest":     api.HeartbeatRequest{Claim: fxClaim(), Progress: json.RawMessage(`{"done":3}`)},
	"HeartbeatResponse":    api.HeartbeatResponse{Now: fxAt, LeaseUntil: fxLater, CancelRequested: true},
	"Push":                 api.Push{Tenant: "acme", IDs: []string{"p1"}, Jobs: 3, Kinds: []string{"email"}, Reactions: []string{"log"}, LingerMs: 1000},
	"PushRequest":          api.PushRequest{Tenant: "acme", ID: "p1", Jobs: 3, Kinds: []string{"email"}, Reactions: []string{"log"}, LingerMs: 1000},
	"PushDone":             api.PushDone{End: api.PushFailed, Error: "503"},
	"PushDoneResponse":     api.PushDoneResponse{Ended: true},
	"PushStatus":           api.PushStatus{InFlight: []api.PushFlight{{ID: "p1", StartedAt: fxAt, ExpiresAt: fxLater, State: api.PushClaiming}}, Pending: true, RetryAt: &fxLater, Failures: 2},
	"PushFlight":           api.PushFlight{ID: "p1", StartedAt: fxAt, ExpiresAt: fxLater, State: api.PushFinishing},
	"AuditEntry":           api.AuditEntry{ID: 1, At: fxAt, Role: api.RoleOperator, TokenID: "ops-1", Route: "POST jobs/{id}/retry", Path: "/v1/t/acme/jobs/1/retry", Status: 200},
	"Retention":            api.Retention{CompletedMs: 1, CancelledMs: 2, DeadMs: 3, DeliveriesMs: 4, CommandsMs: 5, AuditMs: 6},
	"RetentionResponse":    api.RetentionResponse{Effective: api.DefaultRetention, Module: api.DefaultRetention, Overridden: []string{"dead_ms"}, NextPurgeAt: &fxAt},
	"StorageKind":          api.StorageKind{Kind: "jobs", Rows: 2, Bytes: 400},
	"Usage":                fxUsage,
	"UsageDay":             api.UsageDay{Day: "2026-01-02", Usage: fxUsage},
	"UsageResponse": api.UsageResponse{Tenant: "acme", From: "2026-01-01", To: "2026-01-02", Days: []api.UsageDay{{Day: "2026-01-02", Usage: fxUsage}},
		Total: fxUsage, Budget: api.Budget{RowsWrittenPerDay: 7, RequestsPerDay: 8}, Refusing: "requests_per_day 8; 9 used today", RefusingUntil: &fxLater},
	"Budget":              api.Budget{RowsWrittenPerDay: 7, RequestsPerDay: 8},
	"BudgetResponse":      api.BudgetResponse{Effective: api.Budget{RowsWrittenPerDay: 7, RequestsPerDay: 8}, Module: api.Budget{RowsWrittenPerDay: 10, RequestsPerDay: 9}, Overridden: true},
	"StorageResponse":     api.StorageResponse{Kinds: []api.StorageKind{{Kind: "jobs", Rows: 2, Bytes: 400}}, CountedBytes: 400, DatabaseBytes: 8192, LimitBytes: api.StorageLimit, WarnBytes: 1, Warning: "past", Retention: api.DefaultRetention},
	"AuditResponse":       api.AuditResponse{Entries: []api.AuditEntry{{ID: 1, At: fxAt, Role: api.RoleOperator, TokenID: "ops-1", Route: "POST jobs/{id}/retry", Path: "/v1/t/acme/jobs/1/retry", Status: 200}}},
	"QueuePause":          api.QueuePause{Paused: true},
	"QueueState":          api.QueueState{Queue: "email", Paused: true},
	"TenantInfo":          api.TenantInfo{Name: "acme", FirstSeen: fxAt, LastSeen: fxLater, Version: 2, Ready: true, Module: "3f2a9c0d1b4e", Schema: 12, Failed: "3_bad: no such table: x", Usage: &api.UsageDay{Day: "2026-01-02", Usage: fxUsage}},
	"TenantsResponse":     api.TenantsResponse{Tenants: []api.TenantInfo{{Name: "acme", FirstSeen: fxAt, LastSeen: fxLater, Version: 2, Ready: true, Module: "3f2a9c0d1b4e", Schema: 12, Failed: "3_bad: x", Usage: &api.UsageDay{Day: "2026-01-02", Usage: fxUsage}}}, Next: "acme", Seq: 7},
	"DirectoryNote":       api.DirectoryNote{Tenant: "acme", First: true, Ready: true, Version: 2, Module: "3f2a9c0d1b4e", Schema: 12, Failed: "3_bad: no such table: x", VersionsOnly: true, Erased: true, Usage: api.UsageDay{Day: "2026-01-02", Usage: fxUsage}},
	"ReportRequest":       fxReport(),
	"ReportResponse":      api.ReportResponse{JobID: "1", State: "retryable", Attempt: 1, Failures: 2, RunAt: fxAt, Duplicate: true, Kind: "k", AttemptMs: 250},
	"BatchReport":         api.BatchReport{JobID: "9", ReportRequest: fxReport()},
	"BatchReportRequest":  api.BatchReportRequest{Reports: []api.BatchReport{{JobID: "9", ReportRequest: fxReport()}}},
	"BatchReportResult":   api.BatchReportResult{JobID: "1", State: "completed", Duplicate: true, Kind: "k", AttemptMs: 250, Error: fxErr},
	"BatchReportResponse": api.BatchReportResponse{Results: []api.BatchReportResult{{JobID: "1", State: "s", Duplicate: true, Kind: "k", AttemptMs: 250, Error: fxErr}}},
	"Status": api.Status{Tenant: "t", Now: fxAt, SchemaVersion: 1, AlarmAt: &fxLater, MigrationDrift: []string{"migration 1_x changed"},
		Module: "3f2a9c0d1b4e", StileSchema: fxSchema, ModuleSchema: fxSchema,
		Kinds: []api.ModuleKind{{Name: "email.send", Queue: "email"}}, Reactions: []api.ModuleReaction{{Name: "refund", Kind: api.ReactionKindProcess}}},
	"ModuleKind":       api.ModuleKind{Name: "email.send", Queue: "email"},
	"ModuleReaction":   api.ModuleReaction{Name: "refund", Kind: api.ReactionKindPolicy},
	"SchemaState":      fxSchema,
	"Erased":           api.Erased{Tenant: "acme", ErasedAt: fxAt, Dropped: 57},
	"ImportResult":     api.ImportResult{Rows: 412, Done: true},
	"ImportAborted":    api.ImportAborted{Tenant: "acme", Tables: []string{"stile_jobs", "orders"}},
	"TenantCreated":    api.TenantCreated{Tenant: "acme", Created: true},
	"ExportMark":       fxExport.Mark,
	"ExportTable":      fxExport.Tables[0],
	"ExportPage":       fxExport,
	"MigrationFailure": *fxSchema.Failed,
	"MigrationAhead":   fxSchema.Ahead[0],
	"CancelRequest":    api.CancelRequest{Reason: "r"},
	"ListResponse":     api.ListResponse{Jobs: []api.Job{fxJob()}, Next: "5"},
	"QueueCounts":      api.QueueCounts{Queue: "q", Counts: map[string]int64{"running": 1, "available": 2}, OldestReadyAt: &fxAt, Unhandled: []string{"k"}},
	"QueuesResponse": api.QueuesResponse{Queues: []api.QueueCounts{{Queue: "q", Counts: map[string]int64{"a": 1}, OldestReadyAt: &fxAt, Unhandled: []string{"k"}}},
		Finished: map[string]int64{"completed": 3, "dead": 1}, Paused: []string{"email"}},
	"Limit":             api.Limit{Key: "k", Slots: 2, InUse: 1},
	"SetLimitRequest":   api.SetLimitRequest{Slots: &fxInt64},
	"LimitsResponse":    api.LimitsResponse{Limits: []api.Limit{{Key: "k", Slots: 2, InUse: 1}}},
	"Rate":              fxRate(),
	"OperationRequest":  api.OperationRequest{Action: "replay", Filter: "state=dead", Reaction: "notify", FromSeq: 7},
	"FailingJobs":       fxFailingJobs(),
	"FailingReaction":   api.FailingReaction{Name: "refund", Failing: 2, Seq: 9, Error: "e"},
	"FailingProjection": api.FailingProjection{Name: "orders", ErrorSeq: 4, Error: "e"},
	"FailingResponse": api.FailingResponse{Jobs: []api.FailingJobs{fxFailingJobs()}, Reactions: []api.FailingReaction{{Name: "r", Failing: 1, Seq: 2, Error: "e"}},
		Projections: []api.FailingProjection{{Name: "p", ErrorSeq: 3, Error: "e"}}, Truncated: true},
	"FailingGroup":            fxFailingGroup,
	"FailingNote":             api.FailingNote{Tenant: "acme", Groups: []api.FailingGroup{fxFailingGroup}, More: 4},
	"FailingTenant":           fxFailingTenant,
	"FleetFailingGroup":       fxFleetFailingGroup(),
	"FleetFailingResponse":    api.FleetFailingResponse{Groups: []api.FleetFailingGroup{fxFleetFailingGroup()}, Tenants: 2, Partial: []string{"acme"}},
	"FleetOperationRequest":   api.FleetOperationRequest{Action: "retry", Filter: "state=dead", Prefix: "acme-"},
	"FleetOperation":          fxFleetOperation(),
	"FleetOperationsResponse": api.FleetOperationsResponse{Operations: []api.FleetOperation{fxFleetOperation()}},
	"TenantOperation":         fxTenantOperation,
	"Operation":               fxOperation(),
	"OperationsResponse":      api.OperationsResponse{Operations: []api.Operation{fxOperation()}},
	"Debounce":                api.Debounce{Key: "d", WindowMs: 100, Keep: "first", MaxWaitMs: 500},
	"Throttle":                api.Throttle{Key: "t", WindowMs: 100},
	"SetRateRequest":          api.SetRateRequest{Limit: &fxInt64, PeriodMs: &fxInt64},
	"RatesResponse":           api.RatesResponse{Rates: []api.Rate{fxRate()}},
	"ScheduleRequest":         api.ScheduleRequest{Cron: "@hourly", Job: fxEnqueue(), Paused: true},
	"Schedule":                fxSchedule(),
	"SchedulesResponse":       api.SchedulesResponse{Schedules: []api.Schedule{fxSchedule()}},
	"TxResult":                api.TxResult{Result: fxRaw},
	"NewEvent":                api.NewEvent{Type: "t", Data: fxRaw},
	"AppendRequest":           api.AppendRequest{ExpectedVersion: &fxInt64, Events: []api.NewEvent{{Type: "t", Data: fxRaw}}},
	"AppendResponse":          api.AppendResponse{Stream: "s", Version: 1, FirstSeq: 2, LastSeq: 3},
	"Event":                   fxEvent(),
	"EventsResponse":          api.EventsResponse{Events: []api.Event{fxEvent()}, Next: 2, Head: 99},
	"Command":                 fxCommand(),
	"CommandResult":           api.CommandResult{ID: "c", Stream: "s", Version: 5, Events: []api.Event{fxEvent()}, JobIDs: []string{"j"}, Duplicate: true},
	"ReactionClaimRequest":    api.ReactionClaimRequest{Worker: "w", Handlers: []string{"h"}, Limit: 2, WaitMs: 3, Push: "p1"},
	"Delivery":                fxDelivery(),
	"ReactionClaimResponse":   api.ReactionClaimResponse{Now: fxAt, Deliveries: []api.Delivery{fxDelivery()}, RetryAfterMs: 1000},
	"ScheduledCommand":        api.ScheduledCommand{At: fxAt, Command: fxCommand()},
	"Deadline":                api.Deadline{Name: "d", At: fxAt},
	"Settlement":              fxSettlement(),
	"SettleRequest":           api.SettleRequest{Settlements: []api.Settlement{fxSettlement()}},
	"SettleResult":            fxSettleResult(),
	"SettleResponse":          api.SettleResponse{Results: []api.SettleResult{fxSettleResult()}},
	"InboxEntry":              fxInbox(),
	"ReactionStatus":          fxReaction(),
	"ReactionsResponse":       api.ReactionsResponse{Head: 7, Reactions: []api.ReactionStatus{fxReaction()}},
	"SkipRequest":             api.SkipRequest{Seq: 1, Reason: "r"},
	"ReactionPause":           api.ReactionPause{Paused: true},
	"DeadlineFired":           api.DeadlineFired{Process: "p", Correlation: "c", Name: "n\u2028", At: fxAt},
	"ProjectionStatus":        fxProjection(),
	"GenerationStatus":        *fxGeneration(),
	"ProjectionsResponse":     api.ProjectionsResponse{Projections: []api.ProjectionStatus{fxProjection()}},
	"QueryResult":             api.QueryResult{Rows: []json.RawMessage{json.RawMessage(`{"a":1}`), fxRaw}, Truncated: true, Projection: fxQueryProjection()},
	"QueryProjection":         *fxQueryProjection(),
	"WatchFilter":             api.WatchFilter{Job: "7", Kind: "email"},
	"Change":                  api.Change{Jobs: []api.JobChange{fxJobChange}, Reactions: []string{"log"}, Projections: []string{"counts"}, More: true},
	"JobChange":               fxJobChange,
}

var fxJobChange = api.JobChange{ID: "7", Kind: "k\u2028", State: "running", Attempt: 2, Progress: json.RawMessage(`{"done":1}`), ProgressOmitted: true}

// fxUsage counts one of everything.
var fxUsage = api.Usage{Requests: 1, Alarms: 2, RowsRead: 3, RowsWritten: 4, ModuleMicros: 5, Pushes: 6}

// decoders holds the top-level decoder of every type that has one.
var decoders = map[string]func([]byte) (any, error){
	"EnqueueRequest":        dec(api.DecodeEnqueue),
	"EnqueueBatchRequest":   dec(api.DecodeEnqueueBatch),
	"ClaimRequest":          dec(api.DecodeClaim),
	"HeartbeatRequest":      dec(api.DecodeHeartbeat),
	"Push":                  dec(api.DecodePush),
	"PushRequest":           dec(api.DecodePushRequest),
	"PushDone":              dec(api.DecodePushDone),
	"QueuePause":            dec(api.DecodeQueuePause),
	"ExportPage":            dec(api.DecodeExportPage),
	"Retention":             dec(api.DecodeRetention),
	"Budget":                dec(api.DecodeBudget),
	"DirectoryNote":         dec(api.DecodeDirectoryNote),
	"FailingNote":           dec(api.DecodeFailingNote),
	"FleetOperationRequest": dec(api.DecodeFleetOperation),
	"ReportRequest":         dec(api.DecodeReport),
	"BatchReportRequest":    dec(api.DecodeReportBatch),
	"CancelRequest":         dec(api.DecodeCancel),
	"SetLimitRequest":       dec(api.DecodeSetLimit),
	"SetRateRequest":        dec(api.DecodeSetRate),
	"OperationRequest":      dec(api.DecodeOperation),
	"ScheduleRequest":       dec(api.DecodeSchedule),
	"AppendRequest":         dec(api.DecodeAppend),
	"Command":               dec(api.DecodeCommand),
	"ReactionClaimRequest":  dec(api.DecodeReactionClaim),
	"SettleRequest":         dec(api.DecodeSettle),
	"SkipRequest":           dec(api.DecodeSkip),
	"ReactionPause":         dec(api.DecodeReactionPause),
	"DeadlineFired":         dec(api.DecodeDeadlineFired),
	"WatchFilter":           dec(api.DecodeWatchFilter),
	"Change":                dec(api.DecodeChange),
	// Answers, read leniently (TestAnswersReadAsEncodingJSONDoes).
	"ClaimResponse":         dec(api.DecodeClaimResponse),
	"HeartbeatResponse":     dec(api.DecodeHeartbeatResponse),
	"ReportResponse":        dec(api.DecodeReportResponse),
	"BatchReportResponse":   dec(api.DecodeBatchReportResponse),
	"ReactionClaimResponse": dec(api.DecodeReactionClaimResponse),
	"SettleResponse":        dec(api.DecodeSettleResponse),
	"PushDoneResponse":      dec(api.DecodePushDoneResponse),
}

func dec[T any](f func([]byte) (T, error)) func([]byte) (any, error) {
	return func(b []byte) (any, error) { return f(b) }
}

// Every wire type has a fixture with every field set, and every field
// survives: AppendJSON → the type's decoder → equal, and AppendJSON →
// encoding/json's reading → equal. A new type or field without a fixture
// fails here, and so does a field a writer or reader drops.
func TestEveryFieldOfEveryTypeRoundTrips(t *testing.T) {
	t.Parallel()
	types, err := apigen.Types(".")
	require.NoError(t, err)
	require.NotEmpty(t, types)
	names := map[string]bool{}
	for _, typ := range types {
		names[typ.Name] = true
		t.Run(typ.Name, func(t *testing.T) {
			v, ok := fixtures[typ.Name]
			require.True(t, ok, "no fixture for %s: add one with every field set", typ.Name)
			require.Equal(t, typ.Name, reflect.TypeOf(v).Name())
			requireEveryField(t, typ.Name, reflect.ValueOf(v))

			b := v.(interface{ AppendJSON([]byte) []byte }).AppendJSON(nil)
			var m bytes.Buffer
			enc := json.NewEncoder(&m)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(v))
			require.Equal(t, string(b)+"\n", m.String(), "MarshalJSON is AppendJSON")
			require.True(t, json.Valid(b), "%s", b)
			want := wireOnly(v)

			// encoding/json's reading (these types have no UnmarshalJSON).
			back := newOf(v)
			require.NoError(t, json.Unmarshal(b, back), "%s", b)
			require.Equal(t, want, deref(back), "%s", b)

			// The strict decoder's.
			if typ.Decode != "" || typ.Name == "CancelRequest" {
				decode, ok := decoders[typ.Name]
				require.True(t, ok, "no entry in decoders for %s", typ.Name)
				got, err := decode(b)
				require.NoError(t, err, "%s", b)
				require.Equal(t, want, got, "%s", b)
				// And the same JSON as encoding/json words it (keys
				// sorted, <>& escaped) reads back alike.
				var generic any
				require.NoError(t, json.Unmarshal(b, &generic))
				e, err := json.Marshal(generic)
				require.NoError(t, err)
				got, err = decode(e)
				require.NoError(t, err, "%s", e)
				require.Equal(t, want, got, "%s", e)
			}
		})
	}
	for name := range fixtures {
		require.True(t, names[name], "fixture %s is no wire type", name)
	}
	for name := range decoders {
		require.True(t, names[name], "decoder %s is no wire type", name)
	}
}

// requireEveryField fails for a field (at any depth) that is zero, so a
// fixture cannot miss a field. Fields encoding/json skips are skipped.
func requireEveryField(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		require.False(t, v.IsNil(), "%s is nil in the fixture", path)
		requireEveryField(t, path, v.Elem())
	case reflect.Slice, reflect.Map:
		require.NotZero(t, v.Len(), "%s is empty in the fixture", path)
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct {
			requireEveryField(t, path+"[0]", v.Index(0))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			require.False(t, v.Interface().(time.Time).IsZero(), "%s is zero in the fixture", path)
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			requireEveryField(t, path+"."+f.Name, v.Field(i))
		}
	default:
		require.False(t, v.IsZero(), "%s is zero in the fixture", path)
	}
}

// wireOnly is v without the fields that are not on the wire (json:"-").
func wireOnly(v any) any {
	c := reflect.New(reflect.TypeOf(v)).Elem()
	c.Set(reflect.ValueOf(v))
	for i := 0; i < c.NumField(); i++ {
		if c.Type().Field(i).Tag.Get("json") == "-" {
			c.Field(i).SetZero()
		}
	}
	return c.Interface()
}

// An answer's decoder reads what encoding/json reads: a field it does not
// know (a newer server's, at any depth) is skipped, a repeated one's last
// value wins, null leaves a field as it is; and it refuses what
// encoding/json refuses. A request's decoder stays strict.
func TestAnswersReadAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	for _, b := range []string{
		`{"now":"2026-01-02T03:04:05.678Z","jobs":[{"id":"1","kind":"k","args":{"a":1},"lease_ms":4,"new":{"x":[1,{"y":null}]},"lease_until":"2026-01-02T04:04:05.678Z","tags":["t"]}],"more":true,"later":"x"}`,
		`{"now":null,"jobs":null,"retry_after_ms":5,"retry_after_ms":6}`,
		`{"jobs":[{"id":"1","args":null,"tags":null,"attempt":2,"attempt":3}]}`,
		` {"jobs":[]} `,
	} {
		var want api.ClaimResponse
		require.NoError(t, json.Unmarshal([]byte(b), &want), b)
		got, err := api.DecodeClaimResponse([]byte(b))
		require.NoError(t, err, b)
		require.Equal(t, want, got, b)
	}
	for _, b := range []string{
		`{"results":[{"job_id":"1","error":{"code":"stale_attempt","message":"m","extra":true},"next":[]}],"took_ms":3}`,
		`{"results":[{"job_id":"1","error":null}]}`,
	} {
		var want api.BatchReportResponse
		require.NoError(t, json.Unmarshal([]byte(b), &want), b)
		got, err := api.DecodeBatchReportResponse([]byte(b))
		require.NoError(t, err, b)
		require.Equal(t, want, got, b)
	}
	for _, b := range []string{``, `{"jobs":{}}`, `{"now":"yesterday"}`, `{"jobs":[{"attempt":1.5}]}`, `{"jobs":[]} x`, `{"more":"yes"}`, `{"x":tru}`, `[]`} {
		var want api.ClaimResponse
		require.Error(t, json.Unmarshal([]byte(b), &want), b)
		_, err := api.DecodeClaimResponse([]byte(b))
		var de *api.DecodeError
		require.ErrorAs(t, err, &de, b)
	}
	_, err := api.DecodeHeartbeat([]byte(`{"worker":"w","attempt":1,"lease_token":"t","new":1}`))
	require.ErrorContains(t, err, `unknown field "new"`)
	_, err = api.DecodeHeartbeat([]byte(`{"worker":"w","worker":"v"}`))
	require.ErrorContains(t, err, "appears twice")
}

// The presence sets tell a field sent as 0 from one not sent; null counts
// as not sent.
func TestDecodersTellZeroFromAbsent(t *testing.T) {
	t.Parallel()
	e, f, err := api.DecodeEnqueueFields([]byte(`{"kind":"k","lease_ms":0,"max_attempts":null,"unique_key":""}`))
	require.NoError(t, err)
	require.Equal(t, api.EnqueueRequest{Kind: "k"}, e)
	require.True(t, f.Has(api.EnqueueRequestKind|api.EnqueueRequestLeaseMs|api.EnqueueRequestUniqueKey))
	require.False(t, f.Has(api.EnqueueRequestMaxAttempts))
	require.False(t, f.Has(api.EnqueueRequestTimeoutMs))

	_, fs, err := api.DecodeEnqueueBatchFields([]byte(`{"jobs":[{"kind":"a"},{"kind":"b","timeout_ms":0}]}`))
	require.NoError(t, err)
	require.Len(t, fs, 2)
	require.False(t, fs[0].Has(api.EnqueueRequestTimeoutMs))
	require.True(t, fs[1].Has(api.EnqueueRequestTimeoutMs))

	_, fs, err = api.DecodeScheduleFields([]byte(`{"cron":"@hourly","job":{"kind":"a","lease_ms":0}}`))
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.True(t, fs[0].Has(api.EnqueueRequestLeaseMs))

	c, cf, err := api.DecodeClaimFields([]byte(`{"worker":"w","limit":0}`))
	require.NoError(t, err)
	require.Zero(t, c.Limit)
	require.True(t, cf.Has(api.ClaimRequestLimit))
	_, cf, err = api.DecodeClaimFields([]byte(`{"worker":"w"}`))
	require.NoError(t, err)
	require.False(t, cf.Has(api.ClaimRequestLimit))

	_, rf, err := api.DecodeReactionClaimFields([]byte(`{"worker":"w","limit":0}`))
	require.NoError(t, err)
	require.True(t, rf.Has(api.ReactionClaimRequestLimit))
	require.False(t, rf.Has(api.ReactionClaimRequestWaitMs))
}

// The generator refuses what it cannot write faithfully, naming it.
func TestGeneratorRefusesWhatItCannotWrite(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"type A struct{ X float64 `json:\"x\"` }":                                    "type float64 is not written yet",
		"//stile:json DecodeA\ntype A struct{ M map[string]int64 }":                  "decoding map[string]int64 is not written yet",
		"type A struct{ X string `json:\"x\"`; Y string `json:\"x\"` }":              `fields X and Y are both "x"`,
		"//stile:json DecodeA bogus\ntype A struct{ X string }":                      `unknown //stile:json word "bogus"`,
		"type B struct{ X string }\n//stile:json DecodeA fields\ntype A struct{ B }": "embeds no struct",
		"//stile:json decode answer\ntype A struct{ X string }":                      "answer needs DecodeX",
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(dir+"/a.go", []byte("package api\n\n"+src+"\n"), 0o644))
		_, err := apigen.Generate(dir)
		require.ErrorContains(t, err, want, src)
	}
	// A named string type (a future "type Code string") and json:"-".
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/a.go", []byte("package api\n\ntype Code string\n\n//stile:json DecodeA\ntype A struct {\n\tCode Code `json:\"code\"`\n\tStatus int `json:\"-\"`\n}\n"), 0o644))
	out, err := apigen.Generate(dir)
	require.NoError(t, err)
	require.Contains(t, string(out), `o.Str("code", string(v.Code))`)
	require.Contains(t, string(out), "v.Code = Code(s)")
	require.NotContains(t, string(out), "Status")
	require.False(t, strings.Contains(string(out), `"time"`), "no import it does not use")
}

var fxSchema = api.SchemaState{Version: 3, Known: 2, Applied: 1,
	Failed: &api.MigrationFailure{Version: 4, Name: "bad", Error: "no such table: x", At: fxAt, Attempts: 2},
	Ahead:  []api.MigrationAhead{{Version: 3, Name: "add_col", Class: "additive"}}}

var fxExport = api.ExportPage{Format: api.ExportFormat, Tenant: "acme", Mark: api.ExportMark{EventSeq: 120, JobID: 540, At: fxAt},
	StileSchema: 12, ModuleSchema: 2, First: true, Next: "cursor",
	Tables: []api.ExportTable{{Name: "stile_jobs", Columns: []string{"id", "kind"}, First: true, Rows: json.RawMessage(`[[1,"a"]]`)}}}

func fxRate() api.Rate {
	return api.Rate{Key: "k", Limit: 200, PeriodMs: 1000, Source: "tenant", InWindow: 3, OpenAt: &fxAt, Started: 9, Limited: 2}
}

func fxOperation() api.Operation {
	return api.Operation{ID: "3", Action: "replay", Filter: "state=dead", Reaction: "notify", FromSeq: 7, UntilSeq: 12, State: "done",
		Matched: 5, Done: 4, Skipped: 1, LastSkip: "job 9: …", CreatedAt: fxAt, DoneAt: &fxLater}
}

var fxTenantOperation = api.TenantOperation{Tenant: "acme", ID: "3", State: "refused", Matched: 4, Done: 3, Skipped: 1, Error: "e"}

func fxFleetOperation() api.FleetOperation {
	return api.FleetOperation{ID: "1", Action: "retry", Filter: "state=dead", Prefix: "acme-", State: "done", Tenants: 2, Matched: 4, Done: 3,
		Skipped: 1, Refused: 1, CreatedAt: fxAt, DoneAt: &fxAt, Operations: []api.TenantOperation{fxTenantOperation}}
}

var fxFailingGroup = api.FailingGroup{What: "job", Name: "email.send", State: "dead", Error: "timeout after # ms", Count: 3, First: 1000, Last: 2000, Latest: "7"}

var fxFailingTenant = api.FailingTenant{Tenant: "acme", Count: 3, Latest: "7", LastAt: &fxAt}

func fxFleetFailingGroup() api.FleetFailingGroup {
	return api.FleetFailingGroup{What: "job", Name: "email.send", State: "dead", Error: "timeout after # ms", Count: 3, FirstAt: &fxAt, LastAt: &fxAt,
		TenantCount: 1, Tenants: []api.FailingTenant{fxFailingTenant}}
}

func fxFailingJobs() api.FailingJobs {
	return api.FailingJobs{Kind: "email.send", State: "dead", Error: "timeout after # ms", Example: "timeout after 30 ms", Count: 3,
		FirstAt: fxAt, LastAt: fxLater, LatestJob: "9"}
}
