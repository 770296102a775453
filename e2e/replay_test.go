package e2e_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
)

// scenarioReplayAReaction: a policy replayed from the middle of what it
// handled is handed those events again, in order, as new deliveries: a
// settlement of a claim from before the replay is refused, the delivery in
// flight when it started settles as usual (and is replayed after), and the
// event appended meanwhile follows the replayed ones. Refused replays
// write nothing.
func scenarioReplayAReaction(s *scenario) {
	t := s.t
	for i := range 6 {
		_, err := s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted,
			Data: json.RawMessage(`{"n":` + strconv.Itoa(i+1) + `}`)}}})
		require.NoError(t, err)
	}
	first := s.deliveries("a", 10, 5, testapp.AuditPolicy)
	for _, d := range first {
		require.Equal(t, api.OutcomeSucceeded, s.settleOne(succeeded(d)).State)
	}
	inFlight := s.deliveries("a", 10, 1, testapp.AuditPolicy)[0]
	require.EqualValues(t, 6, inFlight.Event.Seq)

	for _, bad := range []struct {
		reaction string
		from     int64
		status   int
		code     api.Code
	}{
		{"nope", 1, http.StatusNotFound, api.CodeNotFound},
		{testapp.ExpiryProcess, 1, http.StatusBadRequest, api.CodeInvalidRequest},
		{testapp.AuditPolicy, 0, http.StatusBadRequest, api.CodeInvalidRequest},
		{testapp.AuditPolicy, 7, http.StatusBadRequest, api.CodeInvalidRequest},
	} {
		_, err := s.ten.Replay(s.ctx, bad.reaction, bad.from)
		requireCode(t, err, bad.status, bad.code)
	}
	ops, err := s.ten.Operations(s.ctx)
	require.NoError(t, err)
	require.Empty(t, ops, "a refused replay writes nothing")

	op, err := s.ten.Replay(s.ctx, testapp.AuditPolicy, 3)
	require.NoError(t, err)
	require.Equal(t, "replay", op.Action)
	require.Equal(t, testapp.AuditPolicy, op.Reaction)
	require.EqualValues(t, 3, op.FromSeq)
	require.EqualValues(t, 6, op.UntilSeq, "it replays up to the checkpoint")
	_, err = s.ten.Replay(s.ctx, testapp.AuditPolicy, 1)
	requireCode(t, err, http.StatusConflict, api.CodeReplayUnderWay)

	// An event appended while the replay runs waits for it.
	_, err = s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{"n":7}`)}}})
	require.NoError(t, err)
	// The delivery in flight holds the replay: nothing is opened before it.
	op, err = s.ten.Operation(s.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, "running", op.State)
	require.Zero(t, op.Done, "nothing replayed while event 6 is in flight")
	s.deliveries("b", 10, 0, testapp.AuditPolicy)
	require.Equal(t, api.OutcomeSucceeded, s.settleOne(succeeded(inFlight)).State, "the claim in flight settles as usual")

	op = s.awaitOperation(op.ID)
	require.EqualValues(t, 4, op.Matched)
	require.EqualValues(t, 4, op.Done)
	require.Zero(t, op.Skipped)
	require.NotNil(t, op.DoneAt)

	again := s.deliveries("b", 10, 5, testapp.AuditPolicy)
	for i, d := range again {
		require.EqualValues(t, 3+i, d.Event.Seq, "replayed in order, then the new event")
		if i < 3 {
			require.NotEqual(t, first[2+i].ClaimID, d.ClaimID)
			require.NotEqual(t, first[2+i].IdempotencyKey, d.IdempotencyKey, "a replayed delivery is a new one")
			require.EqualValues(t, 1, d.Replay)
		}
	}
	require.Zero(t, again[4].Replay, "the new event is a first delivery")
	stale := s.settleOne(succeeded(first[2]))
	require.NotNil(t, stale.Error, "a settlement of the claim before the replay")
	require.Equal(t, api.CodeClaimTakenOver, stale.Error.Code)
	for _, d := range again {
		res := s.settleOne(succeeded(d))
		require.Nil(t, res.Error)
		require.Equal(t, api.OutcomeSucceeded, res.State)
	}
	st, err := s.ten.Reactions(s.ctx)
	require.NoError(t, err)
	for _, r := range st.Reactions {
		if r.Name == testapp.AuditPolicy {
			require.EqualValues(t, 7, r.Checkpoint)
			require.Empty(t, r.Open)
		}
	}
}

// scenarioReplayInSlices: a replay longer than a slice hands the policy
// its events again in order across slices, whenever its claims come
// between them, and the event appended meanwhile follows them all.
func scenarioReplayInSlices(s *scenario) {
	t := s.t
	const n = 250
	for range n / 50 {
		evs := make([]api.NewEvent, 50)
		for i := range evs {
			evs[i] = api.NewEvent{Type: testapp.Noted, Data: json.RawMessage(`{}`)}
		}
		_, err := s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: evs})
		require.NoError(t, err)
	}
	// handle claims what the policy is handed and settles it, in order.
	handle := func() []int64 {
		t.Helper()
		resp, err := s.ten.ClaimReactions(s.ctx, api.ReactionClaimRequest{Worker: "w", Handlers: []string{testapp.AuditPolicy}, Limit: 10})
		require.NoError(t, err)
		var seqs []int64
		var sts []api.Settlement
		for _, d := range resp.Deliveries {
			seqs = append(seqs, d.Event.Seq)
			sts = append(sts, succeeded(d))
		}
		if len(sts) > 0 {
			res, err := s.ten.Settle(s.ctx, sts...)
			require.NoError(t, err)
			for _, r := range res {
				require.Nil(t, r.Error, "%+v", r)
			}
		}
		return seqs
	}
	for handled := 0; handled < n; {
		seqs := handle()
		require.NotEmpty(t, seqs)
		handled += len(seqs)
	}

	op, err := s.ten.Replay(s.ctx, testapp.AuditPolicy, 1)
	require.NoError(t, err)
	_, err = s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{}`)}}})
	require.NoError(t, err)
	var seen []int64
	for range 2000 {
		if len(seen) == n+1 {
			break
		}
		if seqs := handle(); len(seqs) > 0 {
			seen = append(seen, seqs...)
			continue
		}
		op, err = s.ten.Operation(s.ctx, op.ID) // moves it on
		require.NoError(t, err)
		s.tg.advance(t, 20*time.Millisecond)
	}
	want := make([]int64, n+1)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, seen, "replayed in order across slices, then the new event")
	op, err = s.ten.Operation(s.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, "done", op.State)
	require.EqualValues(t, n, op.Matched)
	require.EqualValues(t, n, op.Done)
}
