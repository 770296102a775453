package e2e_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	stiletoken "github.com/stile-run/stile/token"
)

// nextJobChange reads w until a change of job id arrives, and returns
// it; other jobs' changes are skipped.
func (s *scenario) nextJobChange(w *client.Watch, id string) api.JobChange {
	s.t.Helper()
	for {
		c, err := w.Next(s.ctx)
		require.NoError(s.t, err, "waiting for a change of job %s", id)
		for _, j := range c.Jobs {
			if j.ID == id {
				return j
			}
		}
	}
}

func (s *scenario) watch(f api.WatchFilter) *client.Watch {
	s.t.Helper()
	w, err := s.ten.Watch(s.ctx, f)
	require.NoError(s.t, err, "watch %+v", f)
	s.t.Cleanup(func() { w.Close() })
	return w
}

// scenarioWatch: a watch receives the state changes of the jobs it
// follows, in order, and their progress; a refused heartbeat's progress
// sends nothing; filters leave out what they do not follow; a watch is
// refused like any read (token, role, filter) and must be a WebSocket.
func scenarioWatch(s *scenario) {
	t := s.t
	all := s.watch(api.WatchFilter{})
	echoes := s.watch(api.WatchFilter{Kind: "test.echo"})

	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	ch := s.nextJobChange(all, j.ID)
	require.Equal(t, api.JobChange{ID: j.ID, Kind: "test.fast", State: "available", Attempt: 0}, ch)

	one := s.watch(api.WatchFilter{Job: j.ID})
	c := s.claim("wa", 1, 1)[0]
	ch = s.nextJobChange(one, j.ID)
	require.Equal(t, "running", ch.State)
	require.Equal(t, int64(1), ch.Attempt)

	_, err := s.ten.HeartbeatProgress(s.ctx, j.ID, claimOf(c, "wa"), json.RawMessage(`{"step": "zwei", "done": 2}`))
	require.NoError(t, err)
	ch = s.nextJobChange(one, j.ID)
	require.Equal(t, "running", ch.State)
	require.JSONEq(t, `{"step":"zwei","done":2}`, string(ch.Progress))

	// A refused heartbeat's progress changes nothing and sends nothing:
	// the next change of the job is its report.
	_, err = s.ten.HeartbeatProgress(s.ctx, j.ID, api.Claim{Worker: "intruder", Attempt: c.Attempt, LeaseToken: c.LeaseToken}, json.RawMessage(`{"done":99}`))
	requireCode(t, err, http.StatusConflict, api.CodeOtherWorker)
	_, err = s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "wa"), `1`))
	require.NoError(t, err)
	ch = s.nextJobChange(one, j.ID)
	require.Equal(t, "completed", ch.State, "the refused heartbeat sent nothing")
	require.Empty(t, ch.Progress)

	// The unfiltered watch saw the same, in order.
	for _, want := range []string{"running", "running", "completed"} {
		require.Equal(t, want, s.nextJobChange(all, j.ID).State)
	}

	// The kind's watch saw none of it: its first change is its kind's.
	e := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	first, err := echoes.Next(s.ctx)
	require.NoError(t, err)
	require.Len(t, first.Jobs, 1)
	require.Equal(t, e.ID, first.Jobs[0].ID)

	// Refusals, each with its one-line answer.
	_, err = s.ten.Watch(s.ctx, api.WatchFilter{Job: "abc"})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = client.New(s.tg.client().BaseURL(), "not-the-token", nil).Tenant(s.ten.Name()).Watch(s.ctx, api.WatchFilter{})
	requireCode(t, err, http.StatusUnauthorized, api.CodeUnauthorized)
	_, err = s.tg.client().Tenant("never-created-watch").Watch(s.ctx, api.WatchFilter{})
	requireCode(t, err, http.StatusNotFound, api.CodeTenantNotFound)
	status, out, err := s.tg.client().Raw(s.ctx, "GET", api.RouteWatch.Path(s.ten.Name()), nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusUpgradeRequired, status, "%s", out)
	var refusal api.Error
	require.NoError(t, json.Unmarshal(out, &refusal))
	require.Equal(t, api.CodeUpgradeRequired, refusal.Code)

	// A reader may watch; a token for another tenant may not.
	later := time.Now().Add(time.Hour)
	reader, err := stiletoken.Mint(token, stiletoken.Claims{ID: "watcher", Scope: s.ten.Name(), Role: api.RoleReader, Exp: later.Unix()})
	require.NoError(t, err)
	rw, err := client.New(s.tg.client().BaseURL(), reader, nil).Tenant(s.ten.Name()).Watch(s.ctx, api.WatchFilter{Job: e.ID})
	require.NoError(t, err)
	defer rw.Close()
	other, err := stiletoken.Mint(token, stiletoken.Claims{ID: "other", Scope: "elsewhere", Role: api.RoleAdmin, Exp: later.Unix()})
	require.NoError(t, err)
	_, err = client.New(s.tg.client().BaseURL(), other, nil).Tenant(s.ten.Name()).Watch(s.ctx, api.WatchFilter{})
	requireCode(t, err, http.StatusForbidden, api.CodeForbidden)
	_, err = s.ten.Cancel(s.ctx, e.ID, "")
	require.NoError(t, err)
	require.Equal(t, "cancelled", s.nextJobChange(rw, e.ID).State)
}

// TestWorkerdWatchOutlivesTheInstance: a watch is a hibernatable WebSocket
// whose filter is its attachment, so the object keeps nothing of it in
// memory. Left idle with only the watch open, the object is evicted by
// workerd itself (its hibernation: a new instance answers next, and the
// runtime still holds the socket), and the new instance sends the watch
// the changes all the same.
func TestWorkerdWatchOutlivesTheInstance(t *testing.T) {
	t.Parallel()
	w := startWorkerd(t)
	s := newScenario(t, w)
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	watch := s.watch(api.WatchFilter{Job: j.ID})

	type instance struct {
		Instance string `json:"instance"`
		Sockets  int    `json:"sockets"`
	}
	read := func() instance {
		status, b, err := w.cl.Raw(s.ctx, "GET", "/v1/t/"+s.ten.Name()+"/__instance", nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, string(b))
		var in instance
		require.NoError(t, json.Unmarshal(b, &in))
		return in
	}
	before := read()
	require.Equal(t, 1, before.Sockets)
	// Every request keeps the object in memory: look only after a
	// silence longer than workerd's idle time (about 10 s).
	after := before
	for range 6 {
		time.Sleep(15 * time.Second)
		if after = read(); after.Instance != before.Instance {
			break
		}
	}
	require.NotEqual(t, before.Instance, after.Instance, "workerd evicted the idle object: a new instance answers")
	require.Equal(t, 1, after.Sockets, "the runtime kept the watch through the eviction")

	c := s.claim("after-eviction", 1, 1)[0]
	require.Equal(t, j.ID, c.ID)
	ch := s.nextJobChange(watch, j.ID)
	require.Equal(t, "running", ch.State, "the new instance sent the change to the watch the old one accepted")
}

// scenarioWatchSendsOnlyCommitted: a request whose transaction rolled
// back (a trap as it records a report) sends nothing: the watch's next
// change is the progress published after it, with the job still running.
func scenarioWatchSendsOnlyCommitted(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", LeaseMs: 10_000})
	w := s.watch(api.WatchFilter{Job: j.ID})
	c := s.claim("wc", 1, 1)[0]
	require.Equal(t, "running", s.nextJobChange(w, j.ID).State)

	s.tg.injectFault(t, s.ten.Name(), "UPDATE stile_jobs SET state = ?,", 1)
	_, err := s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "wc"), `1`))
	require.Error(t, err, "the report trapped")
	s.tg.injectFault(t, s.ten.Name(), "", 0)

	_, err = s.ten.HeartbeatProgress(s.ctx, j.ID, claimOf(c, "wc"), json.RawMessage(`{"after":"the trap"}`))
	require.NoError(t, err)
	ch := s.nextJobChange(w, j.ID)
	require.Equal(t, "running", ch.State, "the rolled-back report sent nothing")
	require.JSONEq(t, `{"after":"the trap"}`, string(ch.Progress))
}

// scenarioWatchEvents: a watch hears of the reactions whose deliveries
// changed (a claim, a settlement) and of the projections that applied
// events; the tenant's erasure ends it.
func scenarioWatchEvents(s *scenario) {
	t := s.t
	w := s.watch(api.WatchFilter{})
	s.note("watched", testapp.NoteData{N: 1})
	s.caughtUp(false)
	s.nextChangeThat(w, "the notes projection applied the event", func(c api.Change) bool {
		return slices.Contains(c.Projections, testapp.NotesProjection)
	})
	resp, err := s.ten.ClaimReactions(s.ctx, api.ReactionClaimRequest{Worker: "watcher", Handlers: []string{testapp.AuditPolicy}, Limit: 10})
	require.NoError(t, err)
	require.NotEmpty(t, resp.Deliveries)
	s.nextChangeThat(w, "the audit policy's delivery was claimed", func(c api.Change) bool {
		return slices.Contains(c.Reactions, testapp.AuditPolicy)
	})
	for _, d := range resp.Deliveries {
		s.settleOne(succeeded(d))
	}
	s.nextChangeThat(w, "the audit policy's delivery was settled", func(c api.Change) bool {
		return slices.Contains(c.Reactions, testapp.AuditPolicy)
	})

	// An erasure ends the tenant's watches: nothing is left to follow.
	_, err = s.ten.Erase(s.ctx)
	require.NoError(t, err)
	for {
		if _, err := w.Next(s.ctx); err != nil {
			require.NoError(t, s.ctx.Err(), "the watch ended before the scenario's deadline")
			break
		}
	}
}

// nextChangeThat reads w until a change that ok accepts arrives.
func (s *scenario) nextChangeThat(w *client.Watch, what string, ok func(api.Change) bool) api.Change {
	s.t.Helper()
	for {
		c, err := w.Next(s.ctx)
		require.NoError(s.t, err, "waiting for a change: %s", what)
		if ok(c) {
			return c
		}
	}
}
