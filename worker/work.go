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
// and reports or settles it, through the claims, runs, reports and
// settlements a drain for a push makes (every queue, the worker's kinds
// and reactions); false if nothing was ready. Tests call it
// (stiletest.Harness.WorkOne); a program calls Run.
func (w *Worker) WorkOne(ctx context.Context, tenant string) (Ran, bool, error) {
	rs, err := w.work(ctx, tenant, 1)
	if err != nil || len(rs) == 0 {
		return Ran{}, false, err
	}
	return rs[0], true, nil
}

// MaxWorkAll bounds WorkAll: a handler that keeps making work for itself
// (snoozing for 0, say) ends it there.
const MaxWorkAll = 10_000

// WorkAll runs what WorkOne would, one after another, until nothing is
// ready (or MaxWorkAll ran): work the handlers make ready meanwhile, in any
// queue, runs too. It returns what ran, in order.
func (w *Worker) WorkAll(ctx context.Context, tenant string) ([]Ran, error) {
	rs, err := w.work(ctx, tenant, MaxWorkAll)
	if err == nil && len(rs) >= MaxWorkAll {
		err = fmt.Errorf("work: %d runs and %s still has ready work: does a handler keep making its own?", MaxWorkAll, tenant)
	}
	return rs, err
}

// work drains tenant inline, up to max runs.
func (w *Worker) work(ctx context.Context, tenant string, max int) ([]Ran, error) {
	if !api.ValidTenant(tenant) {
		return nil, fmt.Errorf("work: tenant %q: %s", tenant, api.InvalidTenant.Message)
	}
	if len(w.kinds()) == 0 && len(w.reactionNames()) == 0 {
		return nil, errors.New("worker: no handlers registered")
	}
	var ran []Ran
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	_, err := w.drain(ctx, hctx, cancel, api.PushRequest{Tenant: tenant}, Budget{}, drainMode{inline: true, max: max, ran: &ran})
	return ran, err
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
