package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// strict decodes like the API's decoders are meant to: encoding/json with
// unknown fields refused and nothing after the value.
func strict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err == nil {
		return errTrailing
	}
	return nil
}

var errTrailing = &api.DecodeError{Msg: "trailing"}

// differential checks one decoder against encoding/json: whatever it
// accepts is valid JSON that encoding/json accepts too, with equal values.
func differential[T any](t *testing.T, b []byte, decode func([]byte) (T, error)) {
	got, err := decode(b)
	if err != nil {
		require.NotContains(t, err.Error(), "\n", "error messages are one line")
		return
	}
	require.True(t, json.Valid(b), "accepted invalid JSON %q", b)
	var want T
	require.NoError(t, strict(b, &want), "accepted %q, which encoding/json refuses", b)
	require.Equal(t, canon(t, want), canon(t, got), "decoded %q differently", b)
}

// canon re-encodes a request through encoding/json for comparison (raw
// values compacted, so whitespace inside args does not matter).
func canon(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, json.Compact(&out, b))
	return out.String()
}

var seeds = []string{
	`{"kind":"a"}`,
	`{"kind":"a","args":{"x":[1,2,{"y":null}]},"queue":"q","priority":3,"run_at":"2026-11-30T12:00:00.123Z","max_attempts":4,"lease_ms":5000}`,
	`{"kind":"\u00e9\ud83d\ude00\n\"","args":"str","priority":null,"run_at":null}`,
	`{"jobs":[{"kind":"a"},{"kind":"b","args":[]}]}`,
	`{"worker":"w","queues":["a","b"],"kinds":[],"limit":10,"wait_ms":1000}`,
	`{"worker":"w","attempt":2,"lease_token":"tok"}`,
	`{"worker":"w","attempt":2,"lease_token":"tok","outcome":"failed","error":"boom"}`,
	`{"reports":[{"job_id":"1","worker":"w","attempt":1,"lease_token":"t","outcome":"completed","output":{"a":1}}]}`,
	` { "kind" : "a" } `, `{"kind":1}`, `{"kind":"a","colour":1}`, `{"kind":"a"} {}`, `{"priority":1.5}`,
	`{"priority":1e2}`, `{"lease_ms":-0}`, `{"kind":"a\x01"}`, `{"kind":"\ud800"}`, `[]`, `null`, ``, `{`,
	`{"kind":"a",}`, `{"args":01}`, `{"args":tru}`, `{"queues":["a",1]}`, `{"attempt":9223372036854775808}`,
}

func FuzzDecoders(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		differential(t, b, api.DecodeEnqueue)
		differential(t, b, api.DecodeEnqueueBatch)
		differential(t, b, api.DecodeClaim)
		differential(t, b, api.DecodeHeartbeat)
		differential(t, b, api.DecodeReport)
		differential(t, b, api.DecodeReportBatch)
		differential(t, b, api.DecodeStrings)
		require.Equal(t, json.Valid(b), api.Valid(b), "%q", b)
	})
}

func TestDecodersOnSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		differential(t, []byte(s), api.DecodeEnqueue)
		differential(t, []byte(s), api.DecodeEnqueueBatch)
		differential(t, []byte(s), api.DecodeClaim)
		differential(t, []byte(s), api.DecodeHeartbeat)
		differential(t, []byte(s), api.DecodeReport)
		differential(t, []byte(s), api.DecodeReportBatch)
	}
}

func TestDecodeRoundTripsWhatClientsSend(t *testing.T) {
	t.Parallel()
	p := 7
	at := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	e := api.EnqueueRequest{Kind: "k", Args: json.RawMessage(`{"a":"<\u2028>"}`), Queue: "q", Priority: &p, RunAt: &at, MaxAttempts: 3, LeaseMs: 1000}
	b, _ := json.Marshal(e)
	got, err := api.DecodeEnqueue(b)
	require.NoError(t, err)
	require.Equal(t, canon(t, e), canon(t, got))

	batch := api.BatchReportRequest{Reports: []api.BatchReport{{JobID: "9", ReportRequest: api.ReportRequest{
		Claim: api.Claim{Worker: "w", Attempt: 2, LeaseToken: "t"}, Outcome: "completed", Output: json.RawMessage(`[1]`)}}}}
	b, _ = json.Marshal(batch)
	gotBatch, err := api.DecodeReportBatch(b)
	require.NoError(t, err)
	require.Equal(t, batch, gotBatch)
}

func TestDecodeErrorsNameTheProblem(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		``:                            "the request body is empty",
		`{"kind":`:                    "malformed JSON at byte",
		`{"kind":"a","colour":"red"}`: `unknown field "colour"`,
		`{"priority":"high"}`:         `field "priority" must be a number, not string`,
		`{"priority":1.5}`:            `field "priority" must be a whole number, not 1.5`,
		`{"run_at":"tomorrow"}`:       `field "run_at" is not an RFC 3339 time`,
		`{"kind":"a"} {}`:             "unexpected data after the JSON object",
		`[1]`:                         "expected a JSON object, got array",
		`{"kind":"a","args":{"x":}}`:  "malformed JSON at byte",
	} {
		_, err := api.DecodeEnqueue([]byte(body))
		require.ErrorContains(t, err, want, "body %q", body)
	}
}

func TestWritersMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	later := at.Add(time.Hour)
	job := api.Job{ID: "1", Kind: "k\"\\\n\t\x01é\u2028", Queue: "q", Priority: 2, Args: json.RawMessage(`{"a":1}`),
		State: "completed", Attempt: 2, Failures: 1, MaxAttempts: 5, LeaseMs: 100, RunAt: at, CreatedAt: at,
		FinishedAt: &later, Output: json.RawMessage(`"out"`), LastError: "e", Tags: []string{},
		Running:    &api.Attempt{Attempt: 3, Worker: "w", ClaimedAt: at, LeaseUntil: later},
		Attempts:   []api.Attempt{{Attempt: 1, Worker: "w", ClaimedAt: at, LeaseUntil: at, EndedAt: &later, Outcome: "failed", Error: "x", NoticedBy: "report"}},
		Rejections: []api.Rejection{{At: at, Request: "report", Worker: "v", Attempt: 1, Outcome: "completed", Code: "stale_attempt", Message: "m"}}}
	for _, v := range []any{
		job, api.Job{ID: "2", State: "available", RunAt: at, CreatedAt: at, Tags: []string{}},
		api.ClaimResponse{Now: at, Jobs: []api.ClaimedJob{{ID: "1", Kind: "k", Args: json.RawMessage(`null`), LeaseUntil: later, LeaseToken: "t", CreatedAt: at, Tags: []string{"t"}}}},
		api.ClaimResponse{Now: at, Jobs: []api.ClaimedJob{}},
		api.HeartbeatResponse{Now: at, LeaseUntil: later},
		api.ReportResponse{JobID: "1", State: "retryable", Attempt: 1, Failures: 1, RunAt: later, Duplicate: true},
		api.BatchReportResponse{Results: []api.BatchReportResult{{JobID: "1", State: "completed"}, {JobID: "2", Error: &api.Error{Code: "c", Message: "m"}}}},
		api.EnqueueBatchResponse{Jobs: []api.Job{{ID: "3", RunAt: at, CreatedAt: at, Tags: []string{}}}},
		api.Status{Tenant: "t", Now: at, SchemaVersion: 1, AlarmAt: &later},
		api.Error{Code: "c", Message: "<m>&"},
		api.Job{ID: "4", State: "pending", RunAt: at, CreatedAt: at, Tags: []string{"a", "b"}, UniqueKey: "u",
			ConcurrencyKey: "ck", PendingParents: 2, RunRegardless: true, CancelRequestedAt: &later, Existing: true,
			DependsOn: []api.Dependency{{JobID: "1", Resolved: "completed", ResolvedAt: &later}, {JobID: "2"}}},
		api.ListResponse{Jobs: []api.Job{{ID: "5", RunAt: at, CreatedAt: at, Tags: []string{}}}, Next: "5"},
		api.ListResponse{Jobs: []api.Job{}},
		api.QueuesResponse{Queues: []api.QueueCounts{{Queue: "q", Counts: map[string]int64{"running": 1, "available": 2}}},
			Finished: map[string]int64{"completed": 3}},
		api.LimitsResponse{Limits: []api.Limit{{Key: "k", Slots: 2, InUse: 1}}},
		api.SchedulesResponse{Schedules: []api.Schedule{{Name: "s", Cron: "@hourly", Job: json.RawMessage(`{"kind":"k"}`),
			Paused: true, NextAt: later, LastAt: &at, LastJobID: "7", LastError: "e", CreatedAt: at, UpdatedAt: at}}},
		api.TxResult{Result: json.RawMessage(`{"ok":true}`)},
	} {
		b, err := json.Marshal(v) // through MarshalJSON: the hand-written writer
		require.NoError(t, err)
		require.True(t, json.Valid(b), "%s", b)
		// What encoding/json makes of the bytes equals the value.
		back := newOf(v)
		require.NoError(t, json.Unmarshal(b, back), "%s", b)
		// Compared as values, not re-encoded: re-encoding would go through
		// the same writer and hide a field it drops.
		require.Equal(t, v, deref(back), "%s", b)
	}
	b, _ := json.Marshal(api.HeartbeatResponse{Now: at, LeaseUntil: at})
	require.Equal(t, `{"now":"2026-01-02T03:04:05.678Z","lease_until":"2026-01-02T03:04:05.678Z"}`, string(b))
	require.True(t, strings.Contains(string(must(json.Marshal(job))), `\u2028`), "U+2028 is escaped for JS")
}

// The enqueue writer (used by schedules and clients) loses no field: what
// encoding/json reads back from it equals the request, field by field.
func TestEnqueueWriterKeepsEveryField(t *testing.T) {
	t.Parallel()
	p := 0
	at := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	full := api.EnqueueRequest{Kind: "k\"", Args: json.RawMessage(`{"a":[1,"\u2028"]}`), Queue: "q", Priority: &p, RunAt: &at,
		MaxAttempts: 3, LeaseMs: 1000, TimeoutMs: 5000, Tags: []string{"x"}, UniqueKey: "u", UniqueWindowMs: 60000,
		ConcurrencyKey: "ck", DependsOn: []string{"#0", "12"}, RunRegardless: true}
	for _, e := range []api.EnqueueRequest{full, {Kind: "bare"}} {
		b := e.AppendJSON(nil)
		type plain api.EnqueueRequest // no MarshalJSON: encoding/json's own reading
		var back plain
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		require.Equal(t, e, api.EnqueueRequest(back), "%s", b)
		got, err := api.DecodeEnqueue(b)
		require.NoError(t, err)
		require.Equal(t, e, got)
	}
}

func TestStringsAndValid(t *testing.T) {
	t.Parallel()
	for _, v := range [][]string{nil, {}, {"a"}, {"é\n\"", "\u2028", ""}} {
		b := api.AppendStrings(nil, v)
		got, err := api.DecodeStrings(b)
		require.NoError(t, err, "%s", b)
		require.Equal(t, len(v), len(got))
		for i := range v {
			require.Equal(t, v[i], got[i])
		}
	}
	_, err := api.DecodeStrings([]byte(`["a",1]`))
	require.Error(t, err)
	for _, s := range append(seeds, ` 1 `, `"x"`, `[1,]`, `{} {}`, ` `, `nul`) {
		require.Equal(t, json.Valid([]byte(s)), api.Valid([]byte(s)), "%q", s)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
