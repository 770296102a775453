package api_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/jsonwire"
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

var errTrailing = &jsonwire.DecodeError{Msg: "trailing"}

// differential checks one decoder against encoding/json: whatever it
// accepts is valid JSON that encoding/json accepts too, with equal values.
func differential[T any](t *testing.T, b []byte, decode func([]byte) (T, error)) error {
	got, err := decode(b)
	if err != nil {
		require.NotContains(t, err.Error(), "\n", "error messages are one line")
		return err
	}
	require.True(t, json.Valid(b), "accepted invalid JSON %q", b)
	var want T
	require.NoError(t, strict(b, &want), "accepted %q, which encoding/json refuses", b)
	require.Equal(t, canon(t, want), canon(t, got), "decoded %q differently", b)
	return nil
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

// valid holds bodies each decoder must accept: the differential check
// alone passes for a decoder that refuses everything.
var valid = map[string][]string{
	"DecodeEnqueue": {`{"kind":"a"}`, ` { "kind" : "a" } `,
		`{"kind":"a","args":{"x":[1,2,{"y":null}]},"queue":"q","priority":3,"run_at":"2026-11-30T12:00:00.123Z","max_attempts":4,"lease_ms":5000}`,
		`{"kind":"\u00e9\ud83d\ude00\n\"","args":"str","priority":null,"run_at":null}`, `{"lease_ms":-0}`,
		`{"kind":"a","timeout_ms":1,"tags":["x"],"unique_key":"u","unique_window_ms":2,"concurrency_key":"c","depends_on":["#0"],"run_regardless":true}`},
	"DecodeEnqueueBatch":  {`{"jobs":[{"kind":"a"},{"kind":"b","args":[]}]}`, `{"jobs":null}`},
	"DecodeClaim":         {`{"worker":"w","queues":["a","b"],"kinds":[],"limit":10,"wait_ms":1000}`, `{}`},
	"DecodeHeartbeat":     {`{"worker":"w","attempt":2,"lease_token":"tok"}`},
	"DecodeReport":        {`{"worker":"w","attempt":2,"lease_token":"tok","outcome":"failed","error":"boom","final":true,"snooze_ms":1,"tags":["t"]}`},
	"DecodeReportBatch":   {`{"reports":[{"job_id":"1","worker":"w","attempt":1,"lease_token":"t","outcome":"completed","output":{"a":1}}]}`},
	"DecodeStrings":       {`["a","b"]`, `[]`, `null`},
	"DecodeCancel":        {``, `{}`, `{"reason":"r"}`},
	"DecodeSetLimit":      {`{"slots":3}`, `{"slots":null}`},
	"DecodeSchedule":      {`{"cron":"@hourly","job":{"kind":"a","lease_ms":1000},"paused":true}`},
	"DecodeAppend":        {`{"expected_version":0,"events":[{"type":"placed","data":{"x":[1,{"y":null}]}},{"type":"b"}]}`, `{"expected_version":null,"events":[]}`, `{"expected_version":-1,"events":null}`},
	"DecodeCommand":       {`{"id":"c1","aggregate":"order","aggregate_id":"o-\u00e9","type":"place","data":{"items":[1,2]}}`, `{"id":"c1","aggregate":"order","aggregate_id":"o-1","type":"place"}`},
	"DecodeReactionClaim": {`{"worker":"w","handlers":["refunds","emails"],"limit":10,"wait_ms":500}`, `{"worker":"w","handlers":[],"limit":null}`},
	"DecodeSettle": {settleSeed, `{"settlements":[]}`,
		`{"settlements":[{"scheduled":[{"at":null,"command":null}],"deadlines":[{"name":"n","at":null}],"commands":null,"done":false}]}`},
	"DecodeSkip":          {`{"seq":7,"reason":"poison message"}`},
	"DecodeDeadlineFired": {`{"process":"checkout","correlation":"order-1","name":"remind","at":"2026-11-30T12:00:00Z"}`, `{"process":"checkout","at":null}`},
}

// seeds are the fuzz target's seeds: the valid bodies and these, which
// most decoders refuse.
var seeds = append(validSeeds(), `{"kind":1}`, `{"kind":"a","colour":1}`, `{"kind":"a"} {}`, `{"priority":1.5}`,
	`{"priority":1e2}`, `{"kind":"a\x01"}`, `{"kind":"\ud800"}`, `[]`, `null`, ``, `{`,
	`{"kind":"a",}`, `{"args":01}`, `{"args":tru}`, `{"queues":["a",1]}`, `{"attempt":9223372036854775808}`,
	`{"events":[{"type":"a","colour":1}]}`, `{"events":{}}`, `{"events":[1]}`, `{"events":[null]}`, `{"expected_version":"1"}`,
	`{"settlements":[{"scheduled":[{"at":"tomorrow"}]}]}`, `{"settlements":[{"scheduled":[{"command":[]}]}]}`,
	`{"settlements":[{"scheduled":[{"command":{"id":1}}]}]}`, `{"settlements":[{"done":"yes"}]}`,
	`{"settlements":[{"deadlines":[{"name":"n","at":1}]}]}`, `{"settlements":[{"cancel_deadlines":[1]}]}`,
	`{"settlements":[{"commands":[{"id":"x","data":}]}]}`, `{"settlements":[{"seq":1e3}]}`, `{"settlements":{}}`,
	`{"handlers":"refunds"}`, `{"seq":1.5,"reason":"x"}`, `{"process":"p","at":"2026-11-30"}`, `{"process":"p","at":"2026-11-30T25:00:00Z"}`,
	`{"jobs":[1]}`, `{"jobs":{}}`, `{"reports":[null]}`, `{"cron":"x","job":[]}`, `{"slots":"1"}`, `{"worker":"w","attempt":"1"}`,
)

func validSeeds() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(valid)) {
		out = append(out, valid[name]...)
	}
	return out
}

// settleSeed settles three deliveries, the first with every field.
const settleSeed = `{"settlements":[{"handler":"refunds","seq":42,"claim_id":"c","outcome":"succeeded",` +
	`"commands":[{"id":"x","aggregate":"a","aggregate_id":"1","type":"t","data":{}}],` +
	`"scheduled":[{"at":"2026-11-30T12:00:00.5Z","command":{"id":"y","aggregate":"a","aggregate_id":"2","type":"u","data":[1]}}],` +
	`"state":{"step":2,"seen":["a"]},"done":true,` +
	`"deadlines":[{"name":"remind","at":"2026-12-01T00:00:00+01:00"}],"cancel_deadlines":["old",""]},` +
	`{"handler":"h","seq":1,"claim_id":"d","outcome":"failed","error":"boom\n"},` +
	`{"handler":"h","seq":2,"claim_id":"e","outcome":"delayed","delay_ms":1000}]}`

// requestDecoders runs the differential check of each request decoder,
// returning its error.
var requestDecoders = map[string]func(*testing.T, []byte) error{
	"DecodeEnqueue":       check(api.DecodeEnqueue),
	"DecodeEnqueueBatch":  check(api.DecodeEnqueueBatch),
	"DecodeClaim":         check(api.DecodeClaim),
	"DecodeHeartbeat":     check(api.DecodeHeartbeat),
	"DecodeReport":        check(api.DecodeReport),
	"DecodeReportBatch":   check(api.DecodeReportBatch),
	"DecodeStrings":       check(jsonwire.DecodeStrings),
	"DecodeCancel":        func(t *testing.T, b []byte) error { _, err := api.DecodeCancel(b); return err }, // accepts an empty body
	"DecodeSetLimit":      check(api.DecodeSetLimit),
	"DecodeSchedule":      check(api.DecodeSchedule),
	"DecodeAppend":        check(api.DecodeAppend),
	"DecodeCommand":       check(api.DecodeCommand),
	"DecodeReactionClaim": check(api.DecodeReactionClaim),
	"DecodeSettle":        check(api.DecodeSettle),
	"DecodeSkip":          check(api.DecodeSkip),
	"DecodeDeadlineFired": check(api.DecodeDeadlineFired),
}

func check[T any](decode func([]byte) (T, error)) func(*testing.T, []byte) error {
	return func(t *testing.T, b []byte) error { return differential(t, b, decode) }
}

// decodeAll runs the differential check for every request decoder.
func decodeAll(t *testing.T, b []byte) {
	for _, check := range requestDecoders {
		check(t, b)
	}
}

func FuzzDecoders(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeAll(t, b)
		require.Equal(t, json.Valid(b), jsonwire.Valid(b), "%q", b)
	})
}

func TestDecodersOnSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		decodeAll(t, []byte(s))
	}
	for name, check := range requestDecoders {
		require.NotEmpty(t, valid[name], "%s has no valid seed", name)
		for _, s := range valid[name] {
			require.NoError(t, check(t, []byte(s)), "%s refused a valid body: %s", name, s)
		}
	}
}

// The event and reaction decoders read every field of the valid seeds
// (the differential check alone passes for a decoder that refuses all).
func TestEventDecodersReadEveryField(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	a, err := api.DecodeAppend([]byte(`{"expected_version":0,"events":[{"type":"placed","data":{"x":[1,{"y":null}]}},{"type":"b"}]}`))
	require.NoError(t, err)
	require.Equal(t, api.AppendRequest{ExpectedVersion: &zero, Events: []api.NewEvent{
		{Type: "placed", Data: json.RawMessage(`{"x":[1,{"y":null}]}`)}, {Type: "b"}}}, a)
	a, err = api.DecodeAppend([]byte(`{"expected_version":null,"events":[]}`))
	require.NoError(t, err)
	require.Equal(t, api.AppendRequest{Events: []api.NewEvent{}}, a)

	c, err := api.DecodeCommand([]byte(`{"id":"c1","aggregate":"order","aggregate_id":"o-\u00e9","type":"place","data":{"items":[1,2]}}`))
	require.NoError(t, err)
	require.Equal(t, api.Command{ID: "c1", Aggregate: "order", AggregateID: "o-é", Type: "place", Data: json.RawMessage(`{"items":[1,2]}`)}, c)

	rc, err := api.DecodeReactionClaim([]byte(`{"worker":"w","handlers":["refunds","emails"],"limit":10,"wait_ms":500}`))
	require.NoError(t, err)
	require.Equal(t, api.ReactionClaimRequest{Worker: "w", Handlers: []string{"refunds", "emails"}, Limit: 10, WaitMs: 500}, rc)

	sk, err := api.DecodeSkip([]byte(`{"seq":7,"reason":"poison message"}`))
	require.NoError(t, err)
	require.Equal(t, api.SkipRequest{Seq: 7, Reason: "poison message"}, sk)

	df, err := api.DecodeDeadlineFired([]byte(`{"process":"checkout","correlation":"order-1","name":"remind","at":"2026-11-30T12:00:00Z"}`))
	require.NoError(t, err)
	require.Equal(t, api.DeadlineFired{Process: "checkout", Correlation: "order-1", Name: "remind",
		At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, df)

	p, err := api.DecodeSettle([]byte(settleSeed))
	require.NoError(t, err)
	require.Len(t, p.Settlements, 3)
	s := p.Settlements[0]
	require.WithinDuration(t, time.Date(2026, 11, 30, 12, 0, 0, 5e8, time.UTC), s.Scheduled[0].At, 0)
	require.WithinDuration(t, time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC), s.Deadlines[0].At, 0)
	s.Scheduled[0].At, s.Deadlines[0].At = time.Time{}, time.Time{}
	require.Equal(t, api.Settlement{Handler: "refunds", Seq: 42, ClaimID: "c", Outcome: "succeeded",
		Commands: []api.Command{{ID: "x", Aggregate: "a", AggregateID: "1", Type: "t", Data: json.RawMessage(`{}`)}},
		Scheduled: []api.ScheduledCommand{{Command: api.Command{ID: "y", Aggregate: "a", AggregateID: "2", Type: "u",
			Data: json.RawMessage(`[1]`)}}},
		State: json.RawMessage(`{"step":2,"seen":["a"]}`), Done: true,
		Deadlines: []api.Deadline{{Name: "remind"}}, CancelDeadlines: []string{"old", ""}}, s)
	require.Equal(t, api.Settlement{Handler: "h", Seq: 1, ClaimID: "d", Outcome: "failed", Error: "boom\n"}, p.Settlements[1])
	require.Equal(t, api.Settlement{Handler: "h", Seq: 2, ClaimID: "e", Outcome: "delayed", DelayMs: 1000}, p.Settlements[2])

	// What the client sends (encoding/json) reads back the same.
	at := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	req := api.SettleRequest{Settlements: []api.Settlement{{Handler: "h", Seq: 3, ClaimID: "c", Outcome: "succeeded",
		Commands:  []api.Command{{ID: "1", Aggregate: "a", AggregateID: "b", Type: "t", Data: json.RawMessage(`{"\u2028":1}`)}},
		Scheduled: []api.ScheduledCommand{{At: at, Command: api.Command{ID: "2", Aggregate: "a", AggregateID: "b", Type: "t"}}},
		State:     json.RawMessage(`[true]`), Done: true, Deadlines: []api.Deadline{{Name: "d", At: at}}, CancelDeadlines: []string{"e"}}}}
	b, err := json.Marshal(req)
	require.NoError(t, err)
	got, err := api.DecodeSettle(b)
	require.NoError(t, err)
	require.Equal(t, req, got)
}

// A field repeated in one object is refused, with a message naming it:
// encoding/json would merge the two values (for an array of objects, the
// second array into the elements of the first), which nobody means. Raw
// values keep what JSON allows.
func TestDecodersRefuseRepeatedFields(t *testing.T) {
	t.Parallel()
	for body, decode := range map[string]func([]byte) error{
		`{"settlements":[{"handler":"a","seq":1}],"settlements":[{"seq":2}]}`: func(b []byte) error { _, err := api.DecodeSettle(b); return err },
		`{"events":[{"type":"a","data":{"x":1}}],"events":[{"type":"b"}]}`:    func(b []byte) error { _, err := api.DecodeAppend(b); return err },
		`{"jobs":[{"kind":"a"}],"jobs":[{"queue":"q"}]}`:                      func(b []byte) error { _, err := api.DecodeEnqueueBatch(b); return err },
		`{"kind":"a","kind":"b"}`:                                             func(b []byte) error { _, err := api.DecodeEnqueue(b); return err },
	} {
		err := decode([]byte(body))
		require.ErrorContains(t, err, "appears twice", body)
		require.NotContains(t, err.Error(), "\n")
		var de *api.DecodeError // callers outside the module tell a bad body by its type
		require.ErrorAs(t, err, &de, body)
	}
	e, err := api.DecodeEnqueue([]byte(`{"kind":"a","args":{"x":1,"x":2}}`))
	require.NoError(t, err, "a raw value may repeat keys")
	require.Equal(t, `{"x":1,"x":2}`, string(e.Args))
}

// A raw field set to null keeps the value null, as encoding/json does: a
// process whose new state encodes to null (worker.Reaction.SetState(nil))
// clears its state rather than keeping the old one.
func TestDecodersOnNullRawFields(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]string{
		"command data":         `{"id":"c1","aggregate":"order","aggregate_id":"o-1","type":"place","data":null}`,
		"event data":           `{"events":[{"type":"a","data":null}]}`,
		"process state":        `{"settlements":[{"handler":"h","seq":1,"claim_id":"c","outcome":"succeeded","state":null}]}`,
		"settled command data": `{"settlements":[{"commands":[{"id":"x","data":null}]}]}`,
		"job args":             `{"kind":"a","args":null}`,
	} {
		t.Run(name, func(t *testing.T) { decodeAll(t, []byte(s)) })
	}
	st, err := api.DecodeSettle([]byte(`{"settlements":[{"state":null}]}`))
	require.NoError(t, err)
	require.Equal(t, "null", string(st.Settlements[0].State))
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
	four := int64(4)
	job := api.Job{ID: "1", Kind: "k\"\\\n\t\x01é\u2028", Queue: "q", Priority: 2, Args: json.RawMessage(`{"a":1}`),
		State: "completed", Attempt: 2, Failures: 1, MaxAttempts: 5, LeaseMs: 100, RunAt: at, CreatedAt: at,
		FinishedAt: &later, Output: json.RawMessage(`"out"`), LastError: "e", Tags: []string{},
		Running:    &api.Attempt{Attempt: 3, Worker: "w", ClaimedAt: at, LeaseUntil: later},
		Attempts:   []api.Attempt{{Attempt: 1, Worker: "w", ClaimedAt: at, LeaseUntil: at, EndedAt: &later, Outcome: "failed", Error: "x", NoticedBy: "report"}},
		Rejections: []api.Rejection{{At: at, Request: "report", Worker: "v", Attempt: 1, Outcome: "completed", Code: "stale_attempt", Message: "m"}}}
	cmd := api.Command{ID: "c\"1", Aggregate: "order", AggregateID: "o-é", Type: "place", Data: json.RawMessage(`{"items":[1,2]}`)}
	ev := api.Event{Seq: 1, Stream: "order:o-1", Version: 1, Type: "placed", Data: json.RawMessage(`{"a":"\u2028"}`),
		CommandID: "c1", At: at}
	delivery := api.Delivery{Handler: "checkout", Kind: api.ReactionKindProcess, Event: ev, ClaimID: "claim", Attempt: 2,
		Failures: 1, TimeoutMs: 30000, LeaseUntil: later, IdempotencyKey: "0123456789abcdef0123456789abcdef",
		Correlation: "order-1", State: json.RawMessage(`{"step":2}`), LastError: "boom\n"}
	inboxEntry := api.InboxEntry{Seq: 5, State: api.InboxRetry, Attempt: 3, Failures: 2, Worker: "w", LeaseUntil: &at,
		RunAt: &later, Error: "e"}
	status := api.ReactionStatus{Name: "checkout", Kind: api.ReactionKindProcess, Types: []string{"placed", "paid"},
		TimeoutMs: 30000, Checkpoint: 40, Lag: 3, Open: []api.InboxEntry{inboxEntry, {Seq: 6, State: api.InboxPending, Attempt: 1}}}
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
		api.Error{Code: api.CodeNotFound, Message: "no"},
		// Events and reactions.
		cmd, api.Command{ID: "c", Aggregate: "a", AggregateID: "1", Type: "t"},
		api.AppendResponse{Stream: "order:1", Version: 3, FirstSeq: 10, LastSeq: 12},
		&api.Error{Code: api.CodeVersionConflict, Message: "m\"", Stream: "order:1", CurrentVersion: &four},
		ev, api.Event{Seq: 2, Stream: "s:1", Version: 1, Type: "t", Data: json.RawMessage(`null`), At: at},
		api.EventsResponse{Events: []api.Event{ev, {Seq: 2, Stream: "s", Version: 2, Type: "u", Data: json.RawMessage(`[]`), At: later}},
			Next: 2, Head: 99},
		api.EventsResponse{Events: []api.Event{}, Head: 0},
		api.CommandResult{ID: "c", Stream: "order:1", Version: 5, Events: []api.Event{ev}, JobIDs: []string{"j1", "j2"}, Duplicate: true},
		api.CommandResult{ID: "c", Stream: "order:1", Events: []api.Event{}},
		delivery, api.Delivery{Handler: "h", Kind: api.ReactionKindPolicy, Event: ev, ClaimID: "c", LeaseUntil: at, IdempotencyKey: "k"},
		api.ReactionClaimResponse{Now: at, Deliveries: []api.Delivery{delivery, delivery}},
		api.ReactionClaimResponse{Now: at, Deliveries: []api.Delivery{}},
		api.SettleResult{Handler: "h", Seq: 7, State: api.InboxSucceeded, Duplicate: true, Events: 3},
		api.SettleResult{Handler: "h", Seq: 8, State: api.InboxRetry, Events: 1,
			Error: &api.Error{Code: api.CodeCommandRejected, Message: "no\nway"}},
		api.SettleResult{Handler: "h", Seq: 9, Error: &api.Error{Code: api.CodeClaimTakenOver, Message: "m"}},
		api.SettleResponse{Results: []api.SettleResult{{Handler: "h", Seq: 1, State: api.InboxSucceeded},
			{Handler: "h", Seq: 2, Error: &api.Error{Code: api.CodeOutOfOrder, Message: "m"}}}},
		api.SettleResponse{Results: []api.SettleResult{}},
		inboxEntry, api.InboxEntry{Seq: 1, State: api.InboxReady},
		status, api.ReactionStatus{Name: "p", Kind: api.ReactionKindPolicy, Types: []string{}, Open: []api.InboxEntry{}},
		api.ReactionsResponse{Head: 77, Reactions: []api.ReactionStatus{status}},
		api.ReactionsResponse{Reactions: []api.ReactionStatus{}},
		api.DeadlineFired{Process: "checkout", Correlation: "order-1", Name: "remind\u2028", At: later},
	} {
		b, err := json.Marshal(v) // through MarshalJSON: the generated writer
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
		b := jsonwire.AppendStrings(nil, v)
		got, err := jsonwire.DecodeStrings(b)
		require.NoError(t, err, "%s", b)
		require.Equal(t, len(v), len(got))
		for i := range v {
			require.Equal(t, v[i], got[i])
		}
	}
	_, err := jsonwire.DecodeStrings([]byte(`["a",1]`))
	require.Error(t, err)
	for _, s := range append(seeds, ` 1 `, `"x"`, `[1,]`, `{} {}`, ` `, `nul`) {
		require.Equal(t, json.Valid([]byte(s)), jsonwire.Valid([]byte(s)), "%q", s)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// ParseTime accepts what time.Time's UnmarshalJSON reads, as the same
// instant, and nothing that it refuses.
func TestParseTimeAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"2026-11-30T12:00:00Z", "2026-11-30T12:00:00.5Z", "2026-11-30T12:00:00.123456789Z",
		"2026-12-01T00:00:00+01:00", "2026-12-01T00:00:00-07:30", "2024-02-29T23:59:59Z", "2026-11-30T12:00:00+00:00",
		"2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-30 12:00:00Z", "2026-11-30T12:00:00", "2026-11-30T24:00:00Z",
		"2026-11-30T12:00:00.Z", "2026-11-30T12:00:00.1234567890Z", "2026-11-30T12:00:00+0100", "2026-11-30T12:00:00+24:00",
		"tomorrow", "", "2026-11-30t12:00:00z", "+2026-11-30T12:00:00Z", "2026-11-30T12:00:60Z"} {
		var want time.Time
		wantErr := json.Unmarshal([]byte(`"`+s+`"`), &want)
		got, ok := jsonwire.ParseTime(s)
		if wantErr != nil {
			require.False(t, ok, "accepted %q, which encoding/json refuses", s)
			continue
		}
		if s == "2026-11-30T12:00:00+24:00" {
			require.False(t, ok, "an offset of 24 hours is not RFC 3339; encoding/json reads it, Stile does not")
			continue
		}
		require.True(t, ok, "refused %q, which encoding/json reads", s)
		require.True(t, want.Equal(got), "%q: %v vs %v", s, want, got)
		_, offset := got.Zone()
		_, wantOffset := want.Zone()
		require.Equal(t, wantOffset, offset, s)
	}
}
