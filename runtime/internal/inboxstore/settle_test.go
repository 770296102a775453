package inboxstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
)

// ledger is every row of the inbox's tables.
func (f *fixture) ledger() map[string][][]any {
	f.t.Helper()
	out := map[string][][]any{}
	for _, table := range []string{"stile_inbox", "stile_reactions", "stile_scheduled_commands", "stile_deadlines",
		"stile_process_state"} {
		out[table] = dosqltest.Rows(f.t, f.db, `SELECT * FROM `+table+` ORDER BY 1, 2`)
	}
	return out
}

func (f *fixture) entry(handler string, seq int64) inbox.Entry {
	f.t.Helper()
	e, err := f.s.Entry(handler, seq)
	require.NoError(f.t, err)
	require.NotNil(f.t, e)
	return *e
}

// A settlement commits only under the delivery's current claim and only
// once: a claim taken over, settled already, failed already or skipped is
// do.ErrGuard and writes nothing. A claim whose lease ran out settles
// while nobody took the delivery over.
func TestSettlementsAreFencedByClaimID(t *testing.T) {
	t.Parallel()
	one := audit
	one.Batch = 1
	type settle func(f *fixture, now int64, e inbox.Entry) error
	succeed := func(f *fixture, now int64, e inbox.Entry) error { return f.s.Succeed(now, e) }
	fail := func(f *fixture, now int64, e inbox.Entry) error { return f.s.Retry(now, e, now+1_000, 1, "down") }
	delay := func(f *fixture, now int64, e inbox.Entry) error { return f.s.Retry(now, e, now+500, 0, "") }
	for _, tc := range []struct {
		name   string
		before func(f *fixture, e inbox.Entry) inbox.Entry // what happened; the entry settled
		settle settle
		stale  bool
		want   inbox.Entry // the fields a settlement sets
	}{
		{name: "success by the holder", settle: succeed,
			want: inbox.Entry{State: inbox.Succeeded}},
		{name: "failure by the holder: retried at its time", settle: fail,
			want: inbox.Entry{State: inbox.Retry, RunAt: 1_500, Failures: 1, Error: "down", Reported: inbox.OutcomeFailed}},
		{name: "delay by the holder: no failure counted", settle: delay,
			want: inbox.Entry{State: inbox.Retry, RunAt: 1_000, Reported: inbox.OutcomeDelayed}},
		{name: "success after the lease ran out, nobody took over", settle: succeed,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.NoError(f.t, f.db.Tx(func() error { return f.s.ApplyDue(e.LeaseUntil) }))
				require.Equal(f.t, inbox.Ready, f.entry("audit", e.Seq).State)
				return e
			},
			want: inbox.Entry{State: inbox.Succeeded}},
		{name: "success under a claim taken over", settle: succeed, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.Len(f.t, f.claim(e.LeaseUntil, "w2", one, 1), 1)
				return e
			}},
		{name: "failure under a claim taken over", settle: fail, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.Len(f.t, f.claim(e.LeaseUntil, "w2", one, 1), 1)
				return e
			}},
		{name: "success again", settle: succeed, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.NoError(f.t, f.db.Tx(func() error { return f.s.Succeed(400, e) }))
				return e
			}},
		{name: "success after a failure", settle: succeed, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.NoError(f.t, f.db.Tx(func() error { return f.s.Retry(400, e, 5_000, 1, "down") }))
				return e
			}},
		{name: "success after a failure whose retry came due, not claimed again", settle: succeed, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.NoError(f.t, f.db.Tx(func() error { return f.s.Retry(400, e, 450, 1, "down") }))
				require.NoError(f.t, f.db.Tx(func() error { return f.s.ApplyDue(450) }))
				require.Equal(f.t, inbox.Ready, f.entry("audit", e.Seq).State)
				return e
			}},
		{name: "failure again", settle: fail, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.NoError(f.t, f.db.Tx(func() error { return f.s.Retry(400, e, 5_000, 1, "down") }))
				return e
			}},
		{name: "success after a skip", settle: succeed, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				require.NoError(f.t, f.db.Tx(func() error { _, err := f.s.Skip(400, "audit", e.Seq, "poison"); return err }))
				return e
			}},
		{name: "success under a claim id never handed out", settle: succeed, stale: true,
			before: func(f *fixture, e inbox.Entry) inbox.Entry {
				e.ClaimID = "0123456789abcdef0123456789abcdef"
				return e
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := open(t)
			require.NoError(t, f.s.Sync(0, []inboxstore.Handler{one}))
			f.append("a", "a")
			ds := f.claim(100, "w", one, 1)
			require.Len(t, ds, 1)
			e := ds[0].Entry
			if tc.before != nil {
				e = tc.before(f, e)
			}
			before, was := f.ledger(), f.entry("audit", e.Seq)

			const now = 500
			err := f.db.Tx(func() error { return tc.settle(f, now, e) })

			if tc.stale {
				require.ErrorIs(t, err, do.ErrGuard)
				require.Equal(t, before, f.ledger(), "a stale settlement writes nothing")
				return
			}
			require.NoError(t, err)
			got := f.entry("audit", e.Seq)
			want := was
			want.State, want.RunAt, want.Failures, want.Reported = tc.want.State, tc.want.RunAt, tc.want.Failures, tc.want.Reported
			want.Error = tc.want.Error
			require.Equal(t, want, got, "the settlement's fields, and nothing else of the entry")
			settledAt := dosqltest.Rows(t, f.db, `SELECT settled_at FROM stile_inbox WHERE handler = 'audit' AND seq = ?`, e.Seq)
			if tc.want.State == inbox.Succeeded {
				require.Equal(t, [][]any{{int64(now)}}, settledAt)
			} else {
				require.Equal(t, [][]any{{nil}}, settledAt)
			}
		})
	}
}

// Due work makes a delivery whose lease ran out, or whose retry came due,
// ready again; nothing before its time.
func TestInboxApplyDue(t *testing.T) {
	t.Parallel()
	f := open(t)
	one := audit
	one.Batch = 1
	two := inboxstore.Handler{Name: "two", Types: []string{"a"}, TimeoutMs: 1_000, Batch: 1}
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{one, two}))
	f.append("a")
	held := f.claim(0, "w", one, 1)[0].Entry
	failed := f.claim(0, "w", two, 1)[0].Entry
	require.NoError(t, f.db.Tx(func() error { return f.s.Retry(10, failed, 3_000, 1, "down") }))
	state := func() [2]inbox.State {
		return [2]inbox.State{f.entry("audit", 1).State, f.entry("two", 1).State}
	}
	require.NoError(t, f.db.Tx(func() error { return f.s.ApplyDue(held.LeaseUntil - 1) }))
	require.Equal(t, [2]inbox.State{inbox.Pending, inbox.Retry}, state())
	require.False(t, f.s.Woke())
	require.NoError(t, f.db.Tx(func() error { return f.s.ApplyDue(held.LeaseUntil) }))
	require.Equal(t, [2]inbox.State{inbox.Ready, inbox.Retry}, state())
	require.Equal(t, "the lease of attempt 1 ran out", f.entry("audit", 1).Error)
	require.True(t, f.s.Woke())
	require.NoError(t, f.db.Tx(func() error { return f.s.ApplyDue(3_000) }))
	require.Equal(t, [2]inbox.State{inbox.Ready, inbox.Ready}, state())
	require.Zero(t, f.entry("two", 1).RunAt)
	next, err := f.s.NextDue()
	require.NoError(t, err)
	require.Zero(t, next, "nothing left to wait for")
}

// A scheduled command is finished once; a deadline fires once, at its
// latest time; a process's state is kept per correlation id until it ends,
// with its deadlines.
func TestScheduledCommandsDeadlinesAndProcessState(t *testing.T) {
	t.Parallel()
	f := open(t)
	require.NoError(t, f.db.Tx(func() error { return f.s.Schedule(1, "c1", 1_000, []byte(`{}`), "p") }))
	require.NoError(t, f.db.Tx(func() error { return f.s.Schedule(1, "c2", 2_000, []byte(`{}`), "p") }))
	cmds, err := f.s.DueCommands(1_999, 10)
	require.NoError(t, err)
	require.Len(t, cmds, 1)
	require.NoError(t, f.db.Tx(func() error { return f.s.FinishScheduled(1_500, "c1", "") }))
	before := f.ledger()
	require.ErrorIs(t, f.db.Tx(func() error { return f.s.FinishScheduled(1_600, "c1", "again") }), do.ErrGuard)
	require.Equal(t, before, f.ledger(), "a command is finished once")
	require.NoError(t, f.db.Tx(func() error { return f.s.FinishScheduled(2_500, "c2", "refused") }))
	require.Equal(t, [][]any{{"c1", "applied", nil, int64(1_500)}, {"c2", "rejected", "refused", int64(2_500)}},
		dosqltest.Rows(t, f.db, `SELECT id, state, error, done_at FROM stile_scheduled_commands ORDER BY id`))
	cmds, err = f.s.DueCommands(10_000, 10)
	require.NoError(t, err)
	require.Empty(t, cmds)

	require.NoError(t, f.db.Tx(func() error { return f.s.SetDeadline("p", "o1", "remind", 5_000) }))
	require.NoError(t, f.db.Tx(func() error { return f.s.SetDeadline("p", "o1", "remind", 4_000) }))
	require.NoError(t, f.db.Tx(func() error { return f.s.SetDeadline("p", "o2", "remind", 4_500) }))
	require.NoError(t, f.db.Tx(func() error { return f.s.SetDeadline("p", "o2", "expire", 9_000) }))
	require.NoError(t, f.db.Tx(func() error { return f.s.SetDeadline("p", "o1", "later", 4_501) }))
	require.NoError(t, f.db.Tx(func() error { return f.s.CancelDeadline("p", "o3", "none") }), "no such deadline: no error")
	next, err := f.s.NextDue()
	require.NoError(t, err)
	require.Equal(t, int64(4_000), next, "the moved deadline")
	var due []inboxstore.DueDeadline
	require.NoError(t, f.db.Tx(func() (err error) { due, err = f.s.TakeDueDeadlines(4_500, 10); return }))
	require.Equal(t, []inboxstore.DueDeadline{{Process: "p", Correlation: "o1", Name: "remind", At: 4_000},
		{Process: "p", Correlation: "o2", Name: "remind", At: 4_500}}, due)
	require.NoError(t, f.db.Tx(func() (err error) { due, err = f.s.TakeDueDeadlines(4_500, 10); return }))
	require.Empty(t, due, "each fires once")
	deadlines := func() [][]any {
		return dosqltest.Rows(t, f.db, `SELECT correlation, name, at FROM stile_deadlines ORDER BY at`)
	}
	require.Equal(t, [][]any{{"o1", "later", int64(4_501)}, {"o2", "expire", int64(9_000)}}, deadlines(), "none before its time")

	require.NoError(t, f.db.Tx(func() error { return f.s.SetProcessState(1, "p", "o2", []byte(`{"n":1}`)) }))
	require.NoError(t, f.db.Tx(func() error { return f.s.SetProcessState(2, "p", "o2", []byte(`{"n":2}`)) }))
	st, err := f.s.ProcessState("p", "o2")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":2}`, string(st))
	require.NoError(t, f.db.Tx(func() error { return f.s.EndProcess("p", "o2") }))
	st, err = f.s.ProcessState("p", "o2")
	require.NoError(t, err)
	require.Nil(t, st)
	require.Equal(t, [][]any{{"o1", "later", int64(4_501)}}, deadlines(), "its deadline went with it, another's stays")
}
