package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stile-run/stile/api"
)

// Ran is what WorkOne ran: one job attempt or one reaction delivery, and
// the outcome the worker reported for it.
type Ran struct {
	Tenant string
	// JobID and Kind name a job; Reaction and Seq a delivery.
	JobID, Kind string
	Reaction    string
	Seq         int64
	// Outcome is the reported outcome (api.OutcomeCompleted, …) or the
	// settlement's (api.OutcomeSucceeded, …); Error its error.
	Outcome, Error string
	// Output is a job's output.
	Output json.RawMessage
	// Settlement is what a delivery's settlement carried: the commands,
	// schedules, state and deadlines the handler staged.
	Settlement *api.Settlement
}

// WorkOne claims one job of the tenant (else one reaction delivery) that
// the worker has a handler for, runs it now, in the calling goroutine,
// and reports or settles it, through the very code Run uses; false if
// nothing was ready. Tests call it (stiletest.Harness.WorkOne); a program
// calls Run.
func (w *Worker) WorkOne(ctx context.Context, tenant string) (Ran, bool, error) {
	if !api.ValidTenant(tenant) {
		return Ran{}, false, fmt.Errorf("work: tenant %q: %s", tenant, api.InvalidTenant.Message)
	}
	kinds, names := w.kinds(), w.reactionNames()
	if len(kinds) == 0 && len(names) == 0 {
		return Ran{}, false, errors.New("worker: no handlers registered")
	}
	ten := w.cl.Tenant(tenant)
	if len(kinds) > 0 {
		resp, err := ten.Claim(ctx, api.ClaimRequest{Worker: w.cfg.ID, Queues: w.cfg.Queues, Kinds: kinds, Limit: 1})
		if err != nil {
			return Ran{}, false, fmt.Errorf("claim a job of %s: %w", tenant, err)
		}
		if len(resp.Jobs) == 1 {
			c := resp.Jobs[0]
			rep := w.run(ctx, ten, c, w.cfg.Clock.Now().Add(c.LeaseUntil.Sub(resp.Now)))
			return Ran{Tenant: tenant, JobID: c.ID, Kind: c.Kind, Outcome: rep.Outcome, Error: rep.Error, Output: rep.Output}, true, nil
		}
	}
	if len(names) > 0 {
		resp, err := ten.ClaimReactions(ctx, api.ReactionClaimRequest{Worker: w.cfg.ID, Handlers: names, Limit: 1})
		if err != nil {
			return Ran{}, false, fmt.Errorf("claim a delivery of %s: %w", tenant, err)
		}
		if len(resp.Deliveries) == 1 {
			d := resp.Deliveries[0]
			s, _ := w.runReaction(ctx, ten, d, w.cfg.Clock.Now().Add(d.LeaseUntil.Sub(resp.Now)))
			return Ran{Tenant: tenant, Reaction: d.Handler, Seq: d.Event.Seq, Outcome: s.Outcome, Error: s.Error, Settlement: &s}, true, nil
		}
	}
	return Ran{}, false, nil
}

// MaxWorkAll bounds WorkAll: a handler that keeps making work for itself
// (snoozing for 0, say) ends it there.
const MaxWorkAll = 10_000

// WorkAll calls WorkOne until nothing is ready (or MaxWorkAll ran) and
// returns what ran, in order.
func (w *Worker) WorkAll(ctx context.Context, tenant string) ([]Ran, error) {
	var out []Ran
	for len(out) < MaxWorkAll {
		r, ok, err := w.WorkOne(ctx, tenant)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, r)
	}
	return out, fmt.Errorf("work: %d runs and %s still has ready work: does a handler keep making its own?", MaxWorkAll, tenant)
}

// TryJob runs a job handler alone, with no tenant: it returns the report
// a worker would send for what the handler returned (its outcome, error,
// output and tags). A test builds the Job; stiletest.TryJob fills in the
// rest.
func TryJob(ctx context.Context, h Handler, job *Job) api.ReportRequest {
	if job.Deadline.IsZero() {
		job.Deadline = time.Now().Add(time.Minute)
	}
	output, herr := call(ctx, h, job)
	return reportOf(job, output, herr, context.Cause(ctx), 0)
}

// TryReaction runs a reaction handler alone, with no tenant: it returns
// the settlement a worker would send — for a success, the commands,
// scheduled commands, state and deadlines the handler staged.
func TryReaction(ctx context.Context, h ReactionHandler, r *Reaction) api.Settlement {
	s := settlementOf(r, callReaction(ctx, h, r), context.Cause(ctx), 0)
	s.Seq = r.Event.Seq
	return s
}
