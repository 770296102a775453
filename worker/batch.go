package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Batch says how a kind's jobs are gathered for one call of its batch
// handler: at most Max jobs (default 100, and never more than the worker
// runs at once: Config.Concurrency), the first of them waiting at most Wait
// for the others (default 1 s).
type Batch struct {
	Max  int
	Wait time.Duration
}

// BatchHandler runs one attempt of each of jobs at once. It returns one
// error per job, in order (nil: the job completed); a nil slice completes
// them all, and a slice of another length fails them all. Each job's
// outcome is reported and fenced on its own, like a single handler's: a
// failed job is retried alone, after its own backoff, and a job whose lease
// was lost in the meantime has its report refused while the others are
// recorded. Snooze and Final apply per job. A job's output is what
// Job.SetOutput set. A panic fails every job of the call.
type BatchHandler func(ctx context.Context, jobs []*Job) []error

// HandleBatch registers h as the batch handler of kind: the jobs of the
// kind the worker claims (pulled or pushed) are gathered as b says and
// handed to h together. Each job keeps its own lease, heartbeats and time
// limit while it waits for its batch and while the batch runs; h's context
// ends at the earliest of their time limits, or when every one of them
// ended (lost, cancelled or timed out). A job whose own context ends while
// it waits leaves with that outcome.
func (w *Worker) HandleBatch(kind string, b Batch, h BatchHandler) {
	if b.Max <= 0 {
		b.Max = 100
	}
	if b.Wait <= 0 {
		b.Wait = time.Second
	}
	g := &gatherer{w: w, max: min(b.Max, w.cfg.Concurrency), wait: b.Wait, h: h, cur: map[string]*gathering{}}
	w.Handle(kind, g.join)
}

// SetOutput sets the output a batch handler's job completes with (a
// single handler returns its output instead).
func (j *Job) SetOutput(v any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.output = v
}

func (j *Job) batchOutput() any {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.output
}

// gatherer gathers a batch kind's jobs as their runs join it, one batch
// per tenant at a time (a call never mixes tenants): the first job of a
// batch starts its wait, the batch runs when it is full or the wait is
// over.
type gatherer struct {
	w    *Worker
	max  int
	wait time.Duration
	h    BatchHandler

	mu  sync.Mutex
	cur map[string]*gathering // by tenant: the batch gathering jobs
}

type gathering struct {
	jobs    []*Job
	ctxs    []context.Context
	full    chan struct{} // closed when it holds max jobs
	left    chan struct{} // closed when every job that joined left
	gone    int           // jobs that left (their own context ended)
	done    chan struct{} // closed when results are set
	results []error
}

// join adds job to the gathering batch and waits for its result.
func (g *gatherer) join(ctx context.Context, job *Job) (any, error) {
	g.mu.Lock()
	b := g.cur[job.Tenant]
	if b == nil {
		b = &gathering{full: make(chan struct{}), left: make(chan struct{}), done: make(chan struct{})}
		g.cur[job.Tenant] = b
		g.w.leaders.Add(1)
		go g.lead(job.Tenant, b)
	}
	i := len(b.jobs)
	b.jobs, b.ctxs = append(b.jobs, job), append(b.ctxs, ctx)
	if len(b.jobs) == g.max {
		delete(g.cur, job.Tenant)
		close(b.full)
	}
	g.mu.Unlock()
	select {
	case <-b.done:
		return job.batchOutput(), b.results[i]
	case <-ctx.Done():
		g.mu.Lock()
		if b.gone++; b.gone == len(b.jobs) {
			select {
			case <-b.left:
			default:
				close(b.left) // no job waits: the leader need not
			}
		}
		g.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

// lead waits for b to fill or for the wait to pass, then runs it with
// the jobs still waiting: one whose own context ended (its lease lost,
// cancelled, timed out, released at shutdown) left with that outcome, and
// is not handed to h.
func (g *gatherer) lead(tenant string, b *gathering) {
	defer g.w.leaders.Done()
	done, stop := g.w.cfg.Clock.After(g.wait)
	select {
	case <-b.full:
	case <-done:
	case <-b.left:
	}
	stop()
	g.mu.Lock()
	if g.cur[tenant] == b {
		delete(g.cur, tenant)
	}
	b.results = make([]error, len(b.jobs))
	var jobs []*Job
	var ctxs []context.Context
	var at []int // where each handed job's result goes
	for i, c := range b.ctxs {
		if c.Err() == nil {
			jobs, ctxs, at = append(jobs, b.jobs[i]), append(ctxs, c), append(at, i)
		}
	}
	g.mu.Unlock()
	defer close(b.done)
	if len(jobs) == 0 {
		return
	}
	ctx, cancel := batchContext(ctxs)
	defer cancel()
	if ctx.Err() != nil {
		return // every job left meanwhile
	}
	results := callBatch(ctx, g.h, jobs)
	for k, i := range at {
		switch {
		case results == nil:
		case len(results) != len(jobs):
			b.results[i] = fmt.Errorf("batch handler returned %d results for %d jobs", len(results), len(jobs))
		default:
			b.results[i] = results[k]
		}
	}
}

// batchContext is a batch's context: the values of its first job's (its
// trace span, say), ending at the earliest of the jobs' deadlines, or once
// every job's own context ended.
func batchContext(ctxs []context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctxs[0]))
	var earliest time.Time
	for _, c := range ctxs {
		if d, ok := c.Deadline(); ok && (earliest.IsZero() || d.Before(earliest)) {
			earliest = d
		}
	}
	stopTimer := func() bool { return false }
	if !earliest.IsZero() {
		var c2 context.Context
		var cancel2 context.CancelFunc
		c2, cancel2 = context.WithDeadline(ctx, earliest)
		ctx, stopTimer = c2, func() bool { cancel2(); return true }
	}
	var mu sync.Mutex
	left := len(ctxs)
	stops := make([]func() bool, len(ctxs))
	for i, c := range ctxs {
		stops[i] = context.AfterFunc(c, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		})
	}
	// AfterFunc runs its function later for a context done already: a
	// batch whose jobs all left before this is over now.
	ended := 0
	for _, c := range ctxs {
		if c.Err() != nil {
			ended++
		}
	}
	if ended == len(ctxs) {
		cancel()
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		stopTimer()
		cancel()
	}
}

// callBatch runs h, turning a panic into every job's failure.
func callBatch(ctx context.Context, h BatchHandler, jobs []*Job) (results []error) {
	defer func() {
		if r := recover(); r != nil {
			err := &panicError{value: r, stack: debug.Stack()}
			results = make([]error, len(jobs))
			for i := range results {
				results[i] = err
			}
		}
	}()
	return h(ctx, jobs)
}
