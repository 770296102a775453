package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/inbox"
)

// Reaction is one event delivered to a policy or a process. What the
// handler dispatches, schedules or sets here is staged, and committed by
// the settlement in one transaction with the success mark, or not at all.
type Reaction struct {
	Tenant  string
	Handler string
	Kind    string // api.ReactionKindPolicy or api.ReactionKindProcess
	Event   api.Event
	// IdempotencyKey is derived from (tenant, handler, event): the same on
	// every retry of this delivery (a replay's delivery has one of its
	// own). Send it to providers that take one; KeyFor derives one per
	// effect.
	IdempotencyKey string
	// Replay is how many replays delivered the event again (0: none).
	Replay   int64
	Attempt  int64 // claims of this delivery, from 1
	Failures int64 // earlier failed attempts
	// Deadline is the handler's time limit on this machine's clock.
	Deadline time.Time
	// LastError is the error of the previous attempt, if it failed.
	LastError string
	// Correlation and State are a process instance's id and its state
	// (nil before its first settlement).
	Correlation string
	State       json.RawMessage

	mu        sync.Mutex
	commands  []api.Command
	scheduled []api.ScheduledCommand
	newState  json.RawMessage
	done      bool
	deadlines []api.Deadline
	cancels   []string
}

// KeyFor derives the idempotency key of one effect of this delivery, e.g.
// r.KeyFor("refund"): the same on every retry.
func (r *Reaction) KeyFor(label string) string { return inbox.KeyFor(r.IdempotencyKey, label) }

// Decode decodes the event's data into v.
func (r *Reaction) Decode(v any) error {
	if err := json.Unmarshal(r.Event.Data, v); err != nil {
		return fmt.Errorf("decode event %d (%s): %w", r.Event.Seq, r.Event.Type, err)
	}
	return nil
}

// Dispatch stages a command, applied when the delivery settles. A command
// without an id gets one derived from the delivery's key and its order,
// so a rerun that dispatches the same commands stores them once.
func (r *Reaction) Dispatch(c api.Command) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.ID == "" {
		c.ID = inbox.CommandID(r.IdempotencyKey, len(r.commands))
	}
	r.commands = append(r.commands, c)
}

// Schedule stages a command to apply at at (by the tenant's alarm).
func (r *Reaction) Schedule(at time.Time, c api.Command) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.ID == "" {
		c.ID = r.KeyFor(fmt.Sprintf("scheduled/%d", len(r.scheduled)))
	}
	r.scheduled = append(r.scheduled, api.ScheduledCommand{At: at, Command: c})
}

// DecodeState decodes a process's state into v; false if it has none yet.
func (r *Reaction) DecodeState(v any) (bool, error) {
	if len(r.State) == 0 || string(r.State) == "null" {
		return false, nil
	}
	return true, json.Unmarshal(r.State, v)
}

// SetState stages a process's new state.
func (r *Reaction) SetState(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode process state: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.newState = b
	return nil
}

// Done ends the process instance: its state and deadlines are deleted.
func (r *Reaction) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
}

// SetDeadline stages a named deadline of the process instance (moving it
// if set): at at, an event of type api.DeadlineEventPrefix+process is
// delivered to the process.
func (r *Reaction) SetDeadline(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deadlines = append(r.deadlines, api.Deadline{Name: name, At: at})
}

// CancelDeadline stages the removal of a named deadline.
func (r *Reaction) CancelDeadline(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancels = append(r.cancels, name)
}

// ReactionHandler handles one delivery. nil settles it succeeded, with
// what it staged; Snooze(d) runs it again after d without counting a
// failure (the handler's later events wait behind it); any other error
// fails it (retried after the backoff).
type ReactionHandler func(ctx context.Context, r *Reaction) error

// HandleReaction registers the handler of a policy or process of the
// module. The worker claims only reactions it has handlers for.
func (w *Worker) HandleReaction(name string, h ReactionHandler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reactions[name] = h
}

// Reactions lists the policies and processes the worker has handlers
// for, sorted.
func (w *Worker) Reactions() []string { return w.reactionNames() }

func (w *Worker) reactionNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.reactions))
}

// reactionLoop claims deliveries for one tenant and runs each handler's
// run of deliveries in order, one slot per run.
func (w *Worker) reactionLoop(ctx, hctx context.Context, tenant string, names []string, runs *runGroup) {
	ten := w.cl.Tenant(tenant)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		resp, err := ten.ClaimReactions(ctx, api.ReactionClaimRequest{Worker: w.cfg.ID, Handlers: names,
			Limit: api.MaxDeliveries, WaitMs: w.cfg.PollWait.Milliseconds()})
		received := w.cfg.Clock.Now()
		<-w.slots
		if err != nil {
			if !w.waitAfter(ctx, &backoff, "reaction claim failed; retrying", tenant, err) {
				return
			}
			continue
		}
		backoff = 0
		if !w.startRuns(ctx, hctx, ten, resp, received, runs) {
			return
		}
		if len(resp.Deliveries) == 0 && !w.pauseUnheld(ctx, resp.RetryAfterMs) {
			return
		}
	}
}

// startRuns runs the deliveries of a claim, each handler's run in order on
// a slot of its own (waited for); false if ctx ended before every run had
// a slot (those not started run out their leases for another claim).
func (w *Worker) startRuns(ctx, hctx context.Context, ten *client.Tenant, resp api.ReactionClaimResponse, received time.Time, runs *runGroup) bool {
	byHandler := map[string][]api.Delivery{}
	var order []string
	for _, d := range resp.Deliveries {
		if _, seen := byHandler[d.Handler]; !seen {
			order = append(order, d.Handler)
		}
		byHandler[d.Handler] = append(byHandler[d.Handler], d)
	}
	for _, name := range order {
		ds := byHandler[name]
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		runs.add()
		go func() {
			defer runs.done()
			defer w.freeSlot()
			for _, d := range ds {
				local := received.Add(d.LeaseUntil.Sub(resp.Now))
				if ctx.Err() != nil || local.Sub(w.cfg.Clock.Now()) < time.Duration(d.TimeoutMs)*time.Millisecond {
					// Not started: the worker is stopping, or the run waited
					// for a slot until this delivery could no longer finish
					// inside its lease (running it could overlap a takeover).
					// Released, with the rest of its run, for the next claim.
					s := api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeDelayed}
					res, err := w.settle(ctx, ten, s, local)
					reactionLine(s, nil, nil, res, err).log(w.log.With("tenant", ten.Name(), "reaction", d.Handler, "seq", d.Event.Seq, "attempt", d.Attempt))
					return
				}
				if _, ok := w.runReaction(hctx, ten, d, local); !ok {
					return // failed or taken over: the rest of the run waits behind it
				}
			}
		}()
	}
	return true
}

// runReaction runs one delivery and settles it; false stops the run.
func (w *Worker) runReaction(hctx context.Context, ten *client.Tenant, d api.Delivery, leaseUntil time.Time) (api.Settlement, bool) {
	w.mu.Lock()
	h := w.reactions[d.Handler]
	w.mu.Unlock()
	log := w.log.With("tenant", ten.Name(), "reaction", d.Handler, "seq", d.Event.Seq, "attempt", d.Attempt)
	deadline := w.cfg.Clock.Now().Add(time.Duration(d.TimeoutMs) * time.Millisecond)
	ctx, cancel := w.withDeadline(hctx, deadline, ErrTimeout)
	defer cancel()
	r := &Reaction{Tenant: ten.Name(), Handler: d.Handler, Kind: d.Kind, Event: d.Event, IdempotencyKey: d.IdempotencyKey,
		Replay: d.Replay, Attempt: d.Attempt, Failures: d.Failures, Deadline: deadline, LastError: d.LastError,
		Correlation: d.Correlation, State: d.State}
	ended := func(api.Settlement, time.Duration, error) {}
	if w.cfg.Tracer != nil {
		ctx, ended = w.cfg.Tracer.StartDelivery(ctx, r, d.Traceparent)
	}
	began := time.Now()
	herr := callReaction(ctx, h, r)
	ran := time.Since(began)
	cause := context.Cause(ctx)
	s := settlementOf(r, herr, cause, d.TimeoutMs)
	s.Seq, s.ClaimID = d.Event.Seq, d.ClaimID
	res, err := w.settle(ctx, ten, s, leaseUntil)
	if err == nil && res.Error != nil {
		ended(s, ran, res.Error)
	} else {
		ended(s, ran, err)
	}
	var refused *api.Error
	if errors.As(err, &refused) && !client.Retryable(err) && !errors.Is(err, api.ErrStale) && s.Outcome != api.OutcomeFailed {
		// The API refused the settlement itself (a command it cannot take,
		// state from a policy, a delay too long): the delivery fails with
		// why, and backs off, instead of running again at every lease.
		s = failedSettlement(s, "the settlement was refused: "+refused.Message)
		res, err = w.settle(ctx, ten, s, leaseUntil)
		reactionLine(s, nil, nil, res, err).log(log)
		w.signals.AttemptEnded.signal(attemptEnd{Reaction: d.Handler, Seq: d.Event.Seq, Attempt: d.Attempt, Outcome: s.Outcome})
		return s, false
	}
	reactionLine(s, herr, cause, res, err).log(log)
	w.signals.AttemptEnded.signal(attemptEnd{Reaction: d.Handler, Seq: d.Event.Seq, Attempt: d.Attempt, Outcome: s.Outcome})
	return s, err == nil && res.Error == nil && s.Outcome == api.OutcomeSucceeded
}

// settlementOf turns what a reaction handler returned (and why its
// context ended, if it did) into the settlement a worker sends, without
// its event's seq and claim: what it staged, if it succeeded.
func settlementOf(r *Reaction, herr, cause error, timeoutMs int64) api.Settlement {
	s := api.Settlement{Handler: r.Handler, Outcome: api.OutcomeSucceeded}
	var sn *snooze
	switch {
	case herr == nil:
		r.mu.Lock()
		s.Commands, s.Scheduled, s.State, s.Done = r.commands, r.scheduled, r.newState, r.done
		s.Deadlines, s.CancelDeadlines = r.deadlines, r.cancels
		r.mu.Unlock()
	case errors.As(herr, &sn):
		s.Outcome, s.DelayMs = api.OutcomeDelayed, max(sn.d.Milliseconds(), 0)
	case errors.Is(cause, ErrShutdown):
		s.Outcome = api.OutcomeDelayed // released: runs again at once, no failure counted
	case errors.Is(cause, ErrTimeout):
		s.Outcome, s.Error = api.OutcomeFailed, fmt.Sprintf("timed out after %d ms: %v", timeoutMs, herr)
	default:
		s.Outcome, s.Error = api.OutcomeFailed, herr.Error()
	}
	if _, err := json.Marshal(s); err != nil {
		// A command's data or the state is not JSON: it cannot be sent.
		s = failedSettlement(s, "the settlement cannot be encoded: "+err.Error())
	}
	return s
}

// failedSettlement is s turned into a failure with msg, and nothing else.
func failedSettlement(s api.Settlement, msg string) api.Settlement {
	return api.Settlement{Handler: s.Handler, Seq: s.Seq, ClaimID: s.ClaimID, Outcome: api.OutcomeFailed, Error: msg}
}

func callReaction(ctx context.Context, h ReactionHandler, r *Reaction) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, stack: debug.Stack()}
		}
	}()
	return h(ctx, r)
}

// settle sends a settlement, batched with the tenant's others (one run of
// a reaction waits for its settlement before its next delivery, so only
// different runs share a request), retrying what may succeed if sent again
// until the lease runs out (a retried settlement that committed answers as
// a duplicate). It returns the inbox's answer, or the error of a
// settlement that was refused or could not be sent; the caller logs the
// delivery's line.
func (w *Worker) settle(ctx context.Context, ten *client.Tenant, s api.Settlement, leaseUntil time.Time) (api.SettleResult, error) {
	return w.batchers(ten).settlements.do(settleItem{ctx, s}, func(err error) bool {
		return gaveUp(err) && !w.cfg.Clock.Now().After(leaseUntil)
	})
}
