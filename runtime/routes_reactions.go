package runtime

import (
	"errors"
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
)

// ---- claim ----

func (t *Tenant) claimReactions(c *call, body []byte) (route, *api.Error) {
	r, f, err := api.DecodeReactionClaimFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if r.Worker == "" || !api.ValidName(r.Worker) {
		return nil, api.Refuse(api.CodeInvalidRequest, "worker %q is invalid: name the claiming worker with %s", r.Worker, api.NameRule)
	}
	hs := t.app.handlers()
	if len(r.Handlers) > 0 {
		hs = hs[:0:0]
		for _, name := range r.Handlers {
			rc, ok := t.app.reactionBy[name]
			if !ok {
				return nil, api.Refuse(api.CodeUnknownHandler, "unknown reaction %q: this module registers %s", name, t.app.reactionNames())
			}
			hs = append(hs, rc.h)
		}
	}
	if r.Limit == 0 && !f.Has(api.ReactionClaimRequestLimit) {
		r.Limit = DefaultReactionBatch
	}
	if r.Limit < 1 || r.Limit > api.MaxDeliveries {
		return nil, api.Refuse(api.CodeInvalidRequest, "limit %d is outside 1-%d", r.Limit, api.MaxDeliveries)
	}
	if r.WaitMs < 0 || r.WaitMs > api.MaxWait.Milliseconds() {
		return nil, api.Refuse(api.CodeInvalidRequest, "wait_ms %d is outside 0-%d", r.WaitMs, api.MaxWait.Milliseconds())
	}
	if e := validPush(r.Push); e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		ds, err := t.reactions.Claim(now, r.Worker, hs, r.Limit, api.MaxAnswerBytes)
		if err != nil {
			return result{}, err
		}
		// A claim that filled its limit may have left deliveries; one that
		// did not found all its reactions could take (a reaction's later
		// events wait behind its run in flight).
		t.claimedFor(r.Push, false, len(ds) == r.Limit)
		tenantID, err := t.events.TenantID()
		if err != nil {
			return result{}, err
		}
		resp := api.ReactionClaimResponse{Now: ts(now), Deliveries: make([]api.Delivery, 0, len(ds))}
		for _, d := range ds {
			rc := t.app.reactionBy[d.Entry.Handler]
			out := api.Delivery{Traceparent: d.Event.Traceparent, Handler: rc.h.Name, Kind: rc.h.Kind, Event: eventView(d.Event), ClaimID: d.Entry.ClaimID,
				Attempt: d.Entry.Attempt, Failures: d.Entry.Failures, TimeoutMs: d.TimeoutMs,
				LeaseUntil: ts(d.Entry.LeaseUntil), IdempotencyKey: inbox.ReplayKey(tenantID, rc.h.Name, d.Event.Seq, d.Entry.Replays),
				LastError: d.Entry.Error, Replay: d.Entry.Replays}
			if rc.h.Kind == api.ReactionKindProcess {
				corr, cerr := t.correlate(rc, d.Event)
				if cerr != nil {
					// Not run: failed now, retried after the backoff.
					runAt, failures := inbox.AfterFailure(d.Entry, rc.h.Backoff, now, mrandFloat())
					msg := printf.Sprintf("correlate event %d: %s", d.Event.Seq, oneLine(cerr.Error()))
					if err := t.reactions.Retry(now, d.Entry, runAt, failures, msg); err != nil {
						return result{}, err
					}
					continue
				}
				out.Correlation = corr
				if out.State, err = t.reactions.ProcessState(rc.h.Name, corr); err != nil {
					return result{}, err
				}
			}
			resp.Deliveries = append(resp.Deliveries, out)
		}
		var res result
		if len(resp.Deliveries) == 0 {
			res.idle = true
			if r.WaitMs > 0 && !t.mayHold(c) {
				resp.RetryAfterMs = api.HeldRetryAfter.Milliseconds()
			} else {
				res.holdMs, res.hold = r.WaitMs, do.Hold{Reactions: true}
			}
		}
		res.status, res.body = statusOK, resp.AppendJSON // a copy of resp, as it is now
		return res, nil
	}, nil
}

// correlate names the process instance of an event: a deadline carries
// its own; other events go through the process's Correlate.
func (t *Tenant) correlate(rc *reaction, e eventstore.Event) (corr string, err error) {
	if e.Type == api.DeadlineEventPrefix+rc.h.Name {
		d, err := api.DecodeDeadlineFired(e.Data)
		if err != nil {
			return "", err
		}
		return d.Correlation, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = printf.Errorf("Correlate panicked: %v", p)
		}
	}()
	corr, err = rc.correlate(eventView(e))
	if err == nil && !api.ValidName(corr) {
		err = printf.Errorf("Correlate returned %q, which is not a valid correlation id (%s)", corr, api.NameRule)
	}
	return corr, err
}

// ---- settle ----

func (t *Tenant) validateSettlement(i int, s api.Settlement) *api.Error {
	where := printf.Sprintf("settlements[%d]: ", i)
	rc, ok := t.app.reactionBy[s.Handler]
	if !ok {
		return api.Refuse(api.CodeUnknownHandler, "%sunknown reaction %q: this module registers %s", where, s.Handler, t.app.reactionNames())
	}
	switch {
	case s.Seq < 1:
		return api.Refuse(api.CodeInvalidRequest, "%smissing field \"seq\": the event's seq from the delivery", where)
	case s.ClaimID == "" || len(s.ClaimID) > 64:
		return api.Refuse(api.CodeInvalidRequest, "%smissing or invalid field \"claim_id\": the claim id from the delivery", where)
	case s.Outcome != api.OutcomeSucceeded && s.Outcome != api.OutcomeFailed && s.Outcome != api.OutcomeDelayed:
		return api.Refuse(api.CodeInvalidRequest, "%soutcome %q is invalid: use succeeded, failed or delayed", where, s.Outcome)
	case s.Outcome == api.OutcomeDelayed && (s.DelayMs < 0 || s.DelayMs > api.MaxReactionDelay.Milliseconds()):
		return api.Refuse(api.CodeInvalidRequest, "%sdelay_ms %d is outside 0-%d", where, s.DelayMs, api.MaxReactionDelay.Milliseconds())
	case s.Outcome != api.OutcomeSucceeded && (len(s.Commands) > 0 || len(s.Scheduled) > 0 || len(s.State) > 0 ||
		s.Done || len(s.Deadlines) > 0 || len(s.CancelDeadlines) > 0):
		return api.Refuse(api.CodeInvalidRequest, "%sonly a succeeded settlement carries commands, state or deadlines", where)
	case len(s.Commands) > api.MaxSettleCommands || len(s.Scheduled) > api.MaxSettleScheduled ||
		len(s.Deadlines)+len(s.CancelDeadlines) > api.MaxSettleDeadlines:
		return api.Refuse(api.CodeInvalidRequest, "%stoo many commands (max %d), scheduled commands (max %d) or deadlines (max %d)",
			where, api.MaxSettleCommands, api.MaxSettleScheduled, api.MaxSettleDeadlines)
	case rc.h.Kind == api.ReactionKindPolicy && (len(s.State) > 0 || s.Done || len(s.Deadlines) > 0 || len(s.CancelDeadlines) > 0):
		return api.Refuse(api.CodeInvalidRequest, "%s%s is a policy: only a process keeps state and deadlines", where, s.Handler)
	case len(s.State) > api.MaxEventBytes:
		return api.Refuse(api.CodeTooLarge, "%sstate of %d bytes exceeds the limit of %d", where, len(s.State), api.MaxEventBytes)
	}
	for j, c := range s.Commands {
		if e := t.validateCommand(printf.Sprintf("%scommands[%d]: ", where, j), c); e != nil {
			return e
		}
	}
	for j, sc := range s.Scheduled {
		if ms := sc.At.UnixMilli(); sc.At.IsZero() || ms < 0 || ms > maxTimeMs {
			return api.Refuse(api.CodeInvalidRequest, "%sscheduled[%d]: missing or out of range field \"at\": use a time from 1970 to 9999", where, j)
		}
		if e := t.validateCommand(printf.Sprintf("%sscheduled[%d].command: ", where, j), sc.Command); e != nil {
			return e
		}
	}
	for j, d := range s.Deadlines {
		if ms := d.At.UnixMilli(); !api.ValidName(d.Name) || d.At.IsZero() || ms < 0 || ms > maxTimeMs {
			return api.Refuse(api.CodeInvalidRequest, "%sdeadlines[%d]: name %q is invalid (%s) or at is missing", where, j, d.Name, api.NameRule)
		}
	}
	for j, n := range s.CancelDeadlines {
		if !api.ValidName(n) {
			return api.Refuse(api.CodeInvalidRequest, "%scancel_deadlines[%d]: name %q is invalid: use %s", where, j, n, api.NameRule)
		}
	}
	return nil
}

func (t *Tenant) settle(body []byte) (route, *api.Error) {
	r, err := api.DecodeSettle(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := batchSize(len(r.Settlements), api.MaxSettlements, "settlements"); e != nil {
		return nil, e
	}
	for i, s := range r.Settlements {
		if e := t.validateSettlement(i, s); e != nil {
			return nil, e
		}
	}
	return func(now int64) (result, error) {
		resp := api.SettleResponse{Results: make([]api.SettleResult, len(r.Settlements))}
		for i, s := range r.Settlements {
			res, err := t.settleOne(now, s)
			if err != nil {
				return result{}, err
			}
			resp.Results[i] = res
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}, nil
}

// errRefused rolls back a nested transaction whose commands were refused.
var errRefused = errors.New("commands refused")

// refusable runs body in a nested transaction (a savepoint) that rolls
// back, leaving nothing of it, when body returns a refusal; the caller's
// transaction goes on. What the stores noted during a rolled-back body
// (due times, appended events) is forgotten with it.
func (t *Tenant) refusable(body func() (*api.Error, error)) (*api.Error, error) {
	appendedBefore, changesBefore, settledBefore := t.events.Savepoint(), t.store.ChangesMark(), t.reactions.ChangesMark()
	var ref *api.Error
	err := t.db.Tx(func() error {
		var err error
		ref, err = body()
		if err == nil && ref != nil {
			return errRefused
		}
		return err
	})
	if ref != nil || err != nil {
		t.due.Unknown()
		t.events.Rollback(appendedBefore)
		t.store.RollbackChanges(changesBefore)
		t.reactions.RollbackChanges(settledBefore)
	}
	if ref != nil {
		return ref, nil
	}
	return nil, err
}

// settleOne fences and commits one settlement. It writes nothing when
// refused; a command its aggregate rejects fails the delivery instead
// (retried after the backoff) and nothing of the rest is written.
func (t *Tenant) settleOne(now int64, s api.Settlement) (api.SettleResult, error) {
	rc := t.app.reactionBy[s.Handler]
	res := api.SettleResult{Handler: s.Handler, Seq: s.Seq}
	e, err := t.reactions.Entry(s.Handler, s.Seq)
	if err != nil {
		return res, err
	}
	earlier := false
	if e != nil && s.Outcome == api.OutcomeSucceeded {
		if earlier, err = t.reactions.EarlierOpen(s.Handler, s.Seq); err != nil {
			return res, err
		}
	}
	dup, rej := inbox.CheckSettle(e, s.Handler, s.Seq, s.ClaimID, inbox.Outcome(s.Outcome), earlier)
	if rej != nil {
		res.Error = rej
		return res, nil
	}
	if dup {
		res.State, res.Duplicate = string(e.State), true
		return res, nil
	}
	switch s.Outcome {
	case api.OutcomeFailed:
		runAt, failures := inbox.AfterFailure(*e, rc.h.Backoff, now, mrandFloat())
		msg := s.Error
		if msg == "" {
			msg = "failed"
		}
		if len(msg) > api.MaxErrorBytes {
			msg = msg[:api.MaxErrorBytes]
		}
		res.State = string(inbox.Retry)
		return res, t.reactions.Retry(now, *e, runAt, failures, msg)
	case api.OutcomeDelayed:
		res.State = string(inbox.Retry)
		return res, t.reactions.Retry(now, *e, now+s.DelayMs, e.Failures, "")
	}
	var appended int
	ref, err := t.refusable(func() (*api.Error, error) {
		var ref *api.Error
		var err error
		appended, ref, err = t.commitSuccess(now, rc, *e, s)
		return ref, err
	})
	switch {
	case ref != nil:
		// Nothing of the settlement stayed; the delivery failed.
		runAt, failures := inbox.AfterFailure(*e, rc.h.Backoff, now, mrandFloat())
		if err := t.reactions.Retry(now, *e, runAt, failures, ref.Message); err != nil {
			return res, err
		}
		res.State = string(inbox.Retry)
		res.Error = ref
		return res, nil
	case err != nil:
		return res, err
	}
	res.State, res.Events = string(inbox.Succeeded), appended
	return res, nil
}

// commitSuccess writes a succeeded settlement: its commands, scheduled
// commands, process state and deadlines, and the success mark.
func (t *Tenant) commitSuccess(now int64, rc *reaction, e inbox.Entry, s api.Settlement) (int, *api.Error, error) {
	source := "reaction:" + s.Handler + ":" + strconv.FormatInt(s.Seq, 10)
	appended := 0
	for _, c := range s.Commands {
		res, ref, err := t.runCommand(now, c, source)
		if err != nil || ref != nil {
			return 0, ref, err
		}
		if !res.Duplicate {
			appended += len(res.Events)
		}
	}
	for _, sc := range s.Scheduled {
		err := t.reactions.Schedule(now, sc.Command.ID, max(sc.At.UnixMilli(), now), sc.Command.AppendJSON(nil), source)
		if errors.Is(err, inboxstore.ErrScheduledIDReused) {
			return 0, api.Refuse(api.CodeCommandIDReused, "scheduled command id %s was scheduled before with a different command: use a new id", sc.Command.ID), nil
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if rc.h.Kind == api.ReactionKindProcess {
		evs, err := t.events.ReadSeqs([]int64{s.Seq})
		if err != nil || len(evs) != 1 {
			return 0, nil, errors.Join(err, printf.Errorf("read event %d: %w", s.Seq, do.ErrGuard))
		}
		corr, err := t.correlate(rc, evs[0])
		if err != nil {
			return 0, api.Refuse(api.CodeInvalidRequest, "%s", "correlate: "+oneLine(err.Error())), nil
		}
		if err := t.settleProcess(now, rc.h.Name, corr, s); err != nil {
			return 0, nil, err
		}
	}
	return appended, nil, t.reactions.Succeed(now, e)
}

func (t *Tenant) settleProcess(now int64, process, corr string, s api.Settlement) error {
	if s.Done {
		return t.reactions.EndProcess(process, corr)
	}
	if len(s.State) > 0 {
		if err := t.reactions.SetProcessState(now, process, corr, s.State); err != nil {
			return err
		}
	}
	for _, d := range s.Deadlines {
		if err := t.reactions.SetDeadline(process, corr, d.Name, d.At.UnixMilli()); err != nil {
			return err
		}
	}
	for _, n := range s.CancelDeadlines {
		if err := t.reactions.CancelDeadline(process, corr, n); err != nil {
			return err
		}
	}
	return nil
}

// ---- status, skip ----

func (t *Tenant) reactionsStatus() route {
	return func(int64) (result, error) {
		head, err := t.events.Head()
		if err != nil {
			return result{}, err
		}
		resp := api.ReactionsResponse{Head: head, Reactions: make([]api.ReactionStatus, len(t.app.reactions))}
		paused, err := t.reactions.Paused()
		if err != nil {
			return result{}, err
		}
		for i, rc := range t.app.reactions {
			st, err := t.reactions.Status(rc.h, api.MaxLagCount, api.MaxOpenShown)
			if err != nil {
				return result{}, err
			}
			v := api.ReactionStatus{Name: rc.h.Name, Kind: rc.h.Kind, Types: rc.h.Types, TimeoutMs: rc.h.TimeoutMs,
				Checkpoint: st.Checkpoint, Lag: st.Lag, Open: make([]api.InboxEntry, len(st.Open)), Paused: paused[rc.h.Name]}
			for j, e := range st.Open {
				ie := api.InboxEntry{Seq: e.Seq, State: string(e.State), Attempt: e.Attempt, Failures: e.Failures,
					Worker: e.Worker, Error: e.Error, RunAt: tsPtr(e.RunAt)}
				if e.State == inbox.Pending {
					ie.LeaseUntil = tsPtr(e.LeaseUntil)
				}
				v.Open[j] = ie
			}
			resp.Reactions[i] = v
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

// pauseReaction pauses or resumes a reaction: while paused, claims hand
// out none of its deliveries (those in flight settle as usual) and its
// events wait past its checkpoint.
func (t *Tenant) pauseReaction(handler string, body []byte) (route, *api.Error) {
	if _, ok := t.app.reactionBy[handler]; !ok {
		return nil, api.Refuse(api.CodeNotFound, "no reaction %q: this module registers %s", handler, t.app.reactionNames())
	}
	r, err := api.DecodeReactionPause(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	return func(now int64) (result, error) {
		if err := t.reactions.SetPaused(now, handler, r.Paused); err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: api.ReactionPause{Paused: r.Paused}.AppendJSON}, nil
	}, nil
}

func (t *Tenant) skipReaction(handler string, body []byte) (route, *api.Error) {
	if _, ok := t.app.reactionBy[handler]; !ok {
		return nil, api.Refuse(api.CodeNotFound, "no reaction %q: this module registers %s", handler, t.app.reactionNames())
	}
	r, err := api.DecodeSkip(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if r.Seq < 1 {
		return nil, api.Refuse(api.CodeInvalidRequest, "missing field \"seq\": the seq of the event to skip")
	}
	if r.Reason == "" {
		return nil, api.Refuse(api.CodeInvalidRequest, "missing field \"reason\": say why the event is skipped (it is kept in the inbox)")
	}
	return func(now int64) (result, error) {
		ok, err := t.reactions.Skip(now, handler, r.Seq, oneLine(r.Reason))
		if err != nil {
			return result{}, err
		}
		if !ok {
			return result{}, api.Refuse(api.CodeNotStuck, "event %d is not the first unsettled delivery of %s: only that one can be skipped", r.Seq, handler)
		}
		return result{status: statusOK, body: api.SettleResult{Handler: handler, Seq: r.Seq, State: string(inbox.Skipped)}.AppendJSON}, nil
	}, nil
}

// ---- due work ----

// dueBatch bounds the scheduled commands and deadlines one request fires;
// the alarm is then due at once and continues.
const dueBatch = 100
