package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// JobContext identifies one attempt of a job.
type JobContext struct {
	// JobID is the job's id, stable across attempts: key idempotent side
	// effects on it.
	JobID string
	// Attempt numbers claims of the job, from 1; it never repeats.
	Attempt int64
	// Deadline is when the current lease runs out, on this machine's clock;
	// heartbeats move it.
	Deadline time.Time
}

// Job is what a handler is given.
type Job struct {
	JobContext
	Tenant string
	Kind   string
	Queue  string
	Args   json.RawMessage
	// AllArgs, for a job debounced with keep "all", are the args of every
	// enqueue it collected, in order (Args are the last); nil otherwise.
	AllArgs     []json.RawMessage
	MaxAttempts int64
	// Failures is how many earlier attempts failed.
	Failures int64
	// Tags are the job's tags when it was claimed.
	Tags []string

	mu      sync.Mutex
	addTags []string
	output  any // SetOutput's, for a batch handler's job
	// publish sends a heartbeat carrying progress (nil: a Job no worker
	// made, with no claim to speak for).
	publish func(ctx context.Context, progress json.RawMessage) error
}

// Progress publishes the handler's progress: v as JSON (at most
// api.MaxProgressBytes), kept on the job and sent to its watchers. It is
// a heartbeat, fenced like the outcome: once the attempt's lease is lost
// the tenant refuses it, writes nothing, and Progress returns an error
// that is ErrLeaseLost (the handler's context is cancelled too). The call
// waits for the tenant's answer; publish as often as a frontend needs,
// not on every item of a tight loop.
func (j *Job) Progress(ctx context.Context, v any) error {
	if j.publish == nil {
		return errors.New("progress: this Job was not handed to a handler by a worker: it has no claim to speak for")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("progress: marshal: %w", err)
	}
	if len(b) > api.MaxProgressBytes {
		return fmt.Errorf("progress: %d bytes of JSON exceed the limit of %d", len(b), api.MaxProgressBytes)
	}
	return j.publish(ctx, b)
}

// Tag buffers tags to add to the job. They are sent with the outcome and
// kept only if the outcome is (a stale attempt's tags are discarded).
func (j *Job) Tag(tags ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.addTags = append(j.addTags, tags...)
}

func (j *Job) tags() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.addTags...)
}

// Decode unmarshals the job's args into v.
func (j *Job) Decode(v any) error {
	if err := json.Unmarshal(j.Args, v); err != nil {
		return fmt.Errorf("decode args of job %s (%s): %w", j.JobID, j.Kind, err)
	}
	return nil
}

// Handler runs one attempt of a job. Its output (JSON-marshalled) is stored
// with a successful outcome; an error fails the attempt, which is retried
// after a backoff until the job's budget is spent. A panic is a failure
// whose error carries the stack.
type Handler func(ctx context.Context, job *Job) (output any, err error)

// ErrLeaseLost is the cause of a handler's context cancelled because the
// job's lease is gone: another attempt may already be running.
var ErrLeaseLost = errors.New("lease lost")

// ErrShutdown is the cause of a handler's context cancelled because the
// worker stopped and its grace period ran out. The job is released: it runs
// again soon, without spending its retry budget.
var ErrShutdown = errors.New("worker shutting down")

// ErrCancelled is the cause of a handler's context cancelled because an
// operator cancelled the job. A handler that then returns an error ends the
// job cancelled; one that finishes its work anyway completes it.
var ErrCancelled = errors.New("job cancelled")

// ErrTimeout is the cause of a handler's context cancelled because the job's
// time limit (its timeout) passed.
var ErrTimeout = errors.New("job timed out")

// Snooze asks to run the job (or the reaction's delivery) again after d,
// without spending its retry budget (the next run is still a new
// attempt): return it from a handler.
func Snooze(d time.Duration) error { return &snooze{d: d} }

type snooze struct{ d time.Duration }

func (s *snooze) Error() string { return fmt.Sprintf("snooze for %s", s.d) }

// Final marks err as not worth retrying: return Final(err) from a handler
// and the job ends dead, whatever its retry budget.
func Final(err error) error { return &final{err: err} }

type final struct{ err error }

func (f *final) Error() string { return f.err.Error() }
func (f *final) Unwrap() error { return f.err }

// Config configures a Worker.
type Config struct {
	// URL of the Stile deployment, e.g. http://127.0.0.1:8787.
	URL string
	// Token is the deployment's bearer token.
	Token string
	// Tenants Run works for, each with its own long-polled claims. With
	// none, Run works for every tenant of the deployment: it long-polls
	// the tenant directory (one request, whatever the number of tenants)
	// for tenants that became ready, and drains each (Drain) until its
	// claims find nothing. An executor that is pushed work calls Drain.
	Tenants []string
	// ID names this worker in claims and in the attempt history. Default:
	// hostname-pid-random.
	ID string
	// Queues to claim from. Default: every queue with ready jobs
	// ([api.AnyQueue]): a worker claims only the kinds it has handlers for,
	// whatever queue the module or the enqueue put them on. Name queues to
	// split them between workers.
	Queues []string
	// Concurrency is how many handlers run at once, across tenants.
	// Default 10.
	Concurrency int
	// PollWait is how long a claim is held open when there is no work.
	// Default 20 s (at most api.MaxWait).
	PollWait time.Duration
	// ShutdownGrace is how long Run waits for running handlers after its
	// context ends before cancelling theirs. Default 30 s.
	ShutdownGrace time.Duration
	// HTTPClient is used for every request. Default: a client with no
	// timeout (claims are long-polls; each call has its own deadline).
	HTTPClient *http.Client
	// Logger receives the worker's log lines. Default: slog.Default().
	Logger *slog.Logger
	// Tracer, if set, is told of each job a handler runs
	// (worker/otelworker implements it with OpenTelemetry).
	Tracer Tracer
	// SingleReports sends each job's report in a request of its own. By
	// default a tenant's reports are batched adaptively (reporter.go): at
	// once when none is in flight, else together with the others that wait.
	SingleReports bool
	// Pacer, if set, bounds the jobs a pushed drain (Drain) starts, beside
	// its slots and budget. The edge executor paces its handlers by their
	// outbound requests and how long they run (package executor/edge).
	Pacer Pacer
	// Env is the handlers' configuration, which they read with
	// Worker.Getenv in their registration. Default: os.Getenv (at the
	// edge, the Worker's vars and secrets are the process environment). A
	// test passes its own (stiletest.Config.Env), so that it needs no
	// t.Setenv and may run in parallel.
	Env func(name string) string
	// Clock keeps the worker's leases, heartbeats and time limits. Default:
	// the wall clock; a test gives the clock it moves by hand
	// (stiletest.Harness.WorkerClock), so that advancing it drives the
	// tenant and the worker alike.
	Clock Clock
}

// Tracer follows the jobs a worker runs. StartJob is called as a handler
// starts, with the traceparent of the request that enqueued the job ("" if
// it had none); the context it returns is the handler's, and end is called
// once the report was sent, with the report, how long the handler ran, and
// the error of a report that was refused or never arrived.
type Tracer interface {
	StartJob(ctx context.Context, job *Job, traceparent string) (_ context.Context, end func(report api.ReportRequest, ran time.Duration, err error))
	// StartDelivery is StartJob for a reaction's delivery: traceparent is
	// that of the request that appended the event, and end is given the
	// settlement and the inbox's answer.
	StartDelivery(ctx context.Context, r *Reaction, traceparent string) (_ context.Context, end func(s api.Settlement, ran time.Duration, err error))
}

// Pacer bounds the jobs a drain starts (Config.Pacer).
type Pacer interface {
	// Pace is asked before each claim of jobs, given how many of the
	// worker's slots are taken: how many more jobs may start now. At 0
	// the drain claims nothing and waits for one of its jobs to end.
	Pace(taken int) int
	// Ran is told how long each job's handler ran, as it returns.
	Ran(d time.Duration)
}

// Clock is the time a worker keeps leases, heartbeats and time limits by.
// Network timeouts and retry backoffs stay on the wall clock.
type Clock interface {
	Now() time.Time
	// After returns a channel closed once d has passed, and a stop that
	// forgets it (the channel is then never closed).
	After(d time.Duration) (<-chan struct{}, func())
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) After(d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := time.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}

// afterFunc calls f in a goroutine of its own once d has passed on the
// worker's clock, unless the stop it returns is called first; stop reports
// whether it kept f from being called. On the wall clock it is
// time.AfterFunc: nothing waits meanwhile.
func (w *Worker) afterFunc(d time.Duration, f func()) (stop func() bool) {
	if _, wall := w.cfg.Clock.(wallClock); wall {
		return time.AfterFunc(d, f).Stop
	}
	fired, stopClock := w.cfg.Clock.After(d)
	var state atomic.Int32 // 0 waiting, 1 called, 2 stopped
	stopped := make(chan struct{})
	go func() {
		select {
		case <-fired:
			if state.CompareAndSwap(0, 1) {
				f()
			}
		case <-stopped:
		}
	}()
	return func() bool {
		if !state.CompareAndSwap(0, 2) {
			return false
		}
		stopClock()
		close(stopped)
		return true
	}
}

// withDeadline is context.WithDeadlineCause on the worker's clock.
func (w *Worker) withDeadline(parent context.Context, at time.Time, cause error) (context.Context, context.CancelFunc) {
	if _, wall := w.cfg.Clock.(wallClock); wall {
		return context.WithDeadlineCause(parent, at, cause)
	}
	ctx, cancel := context.WithCancelCause(parent)
	dc := &clockDeadline{Context: ctx}
	fired, stop := w.cfg.Clock.After(at.Sub(w.cfg.Clock.Now()))
	go func() {
		defer stop()
		select {
		case <-fired:
			dc.passed.Store(true)
			cancel(cause)
		case <-ctx.Done():
		}
	}()
	return dc, func() { cancel(context.Canceled) }
}

// clockDeadline is a context ended by a deadline on the worker's clock: its
// Err is context.DeadlineExceeded once that deadline passed, as a wall
// clock's deadline says, so a handler returning ctx.Err() reports the
// same on either clock. (Its Deadline stays the parent's: a time on a
// clock moved by hand would mislead the net package's dial deadlines.)
type clockDeadline struct {
	context.Context
	passed atomic.Bool
}

func (c *clockDeadline) Err() error {
	err := c.Context.Err()
	if err != nil && c.passed.Load() {
		return context.DeadlineExceeded
	}
	return err
}

// Worker runs handlers. Register handlers with Handle, then call Run.
type Worker struct {
	cfg       Config
	cl        *client.Client
	log       *slog.Logger
	mu        sync.Mutex
	handlers  map[string]Handler
	reactions map[string]ReactionHandler
	slots     chan struct{}
	freed     chan struct{} // a slot was given back (capacity 1)
	requests  atomic.Int64  // HTTP requests the worker sent
	lingering atomic.Int32  // drains holding a claim once out of work
	reporters map[string]*tenantBatchers
	signals   testSignals // off but in tests
	// leaders are the batch handlers' batches gathering or running
	// (HandleBatch): Run returns after them.
	leaders sync.WaitGroup
}

// New returns a worker. It does nothing until Run.
func New(cfg Config) (*Worker, error) {
	if cfg.URL == "" {
		return nil, errors.New("worker: Config.URL is required")
	}
	for _, t := range cfg.Tenants {
		if !api.ValidTenant(t) {
			return nil, fmt.Errorf("worker: tenant %q: %s", t, api.InvalidTenant.Message)
		}
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		rand.Read(b[:])
		cfg.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if !api.ValidName(cfg.ID) {
		return nil, fmt.Errorf("worker: id %q is invalid: use %s", cfg.ID, api.NameRule)
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = []string{api.AnyQueue}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.Env == nil {
		cfg.Env = os.Getenv
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 20 * time.Second
	}
	cfg.PollWait = min(cfg.PollWait, api.MaxWait)
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.HTTPClient == nil {
		// Connections are kept for every handler's heartbeats and
		// reports: http.DefaultTransport keeps 2 per host, and opened a
		// connection for most requests of a busy worker.
		// A program that replaced http.DefaultTransport keeps its own.
		cfg.HTTPClient = http.DefaultClient
		if d, ok := http.DefaultTransport.(*http.Transport); ok {
			tr := d.Clone()
			tr.MaxIdleConnsPerHost = cfg.Concurrency + 4
			cfg.HTTPClient = &http.Client{Transport: tr}
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	w := &Worker{cfg: cfg, log: cfg.Logger.With("worker", cfg.ID), handlers: map[string]Handler{}, reactions: map[string]ReactionHandler{},
		slots: make(chan struct{}, cfg.Concurrency), freed: make(chan struct{}, 1), reporters: map[string]*tenantBatchers{}}
	hc := *cfg.HTTPClient
	hc.Transport = &counting{next: hc.Transport, n: &w.requests}
	w.cl = client.New(cfg.URL, cfg.Token, &hc)
	return w, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Getenv is the value of a variable of the handlers' configuration
// (Config.Env), "" if it is unset. A handler package reads what it needs
// with it in Register: `stile dev --handlers` and `stile work` give the
// process environment, the edge executor the Worker's vars and secrets,
// and a test what it chose.
func (w *Worker) Getenv(name string) string { return w.cfg.Env(name) }

// Requests is how many HTTP requests the worker has sent.
func (w *Worker) Requests() int64 { return w.requests.Load() }

// Handle registers the handler of a job kind. The worker claims only kinds
// it has handlers for.
func (w *Worker) Handle(kind string, h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[kind] = h
}

// Kinds lists the job kinds the worker has handlers for, sorted.
func (w *Worker) Kinds() []string { return w.kinds() }

func (w *Worker) kinds() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.handlers))
}

// Run claims and runs jobs and reaction deliveries until ctx ends, then
// stops claiming, lets running handlers finish for up to ShutdownGrace
// (then cancels their contexts), and returns once every claimed job and
// delivery has been reported, settled or abandoned to its lease.
func (w *Worker) Run(ctx context.Context) error {
	kinds, names := w.kinds(), w.reactionNames()
	if len(kinds) == 0 && len(names) == 0 {
		return errors.New("worker: no handlers registered")
	}

	// Handlers get a context that outlives ctx by the grace period.
	hctx, cancelHandlers := context.WithCancelCause(context.Background())
	defer cancelHandlers(nil)
	jobs := newRunGroup()
	var loops sync.WaitGroup
	if len(w.cfg.Tenants) == 0 {
		loops.Add(1)
		go func() {
			defer loops.Done()
			w.feed(ctx, hctx, cancelHandlers, jobs)
		}()
	}
	for _, tenant := range w.cfg.Tenants {
		if len(kinds) > 0 {
			loops.Add(1)
			go func() {
				defer loops.Done()
				w.claimLoop(ctx, hctx, tenant, kinds, jobs)
			}()
		}
		if len(names) > 0 {
			loops.Add(1)
			go func() {
				defer loops.Done()
				w.reactionLoop(ctx, hctx, tenant, names, jobs)
			}()
		}
	}
	loops.Wait()
	w.signals.Stopped.signal(jobs.Running())
	done := make(chan struct{})
	go func() { jobs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownGrace):
		w.log.Warn("shutdown grace period over; cancelling running handlers")
		cancelHandlers(ErrShutdown)
		<-done
	}
	w.leaders.Wait() // a batch whose jobs all left ends its handler's context
	return nil
}

func (w *Worker) claimLoop(ctx, hctx context.Context, tenant string, kinds []string, jobs *runGroup) {
	ten := w.cl.Tenant(tenant)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		n := w.takeSlots(ctx)
		if n == 0 {
			return
		}
		resp, err := ten.Claim(ctx, api.ClaimRequest{Worker: w.cfg.ID, Queues: w.cfg.Queues, Kinds: kinds,
			Limit: n, WaitMs: w.cfg.PollWait.Milliseconds()})
		received := w.cfg.Clock.Now()
		w.releaseSlots(n - len(resp.Jobs))
		if err != nil {
			if !w.waitAfter(ctx, &backoff, "claim failed; retrying", tenant, err) {
				return
			}
			continue
		}
		backoff = 0
		w.startJobs(hctx, ten, resp, received, jobs)
		if len(resp.Jobs) == 0 && !w.pauseUnheld(ctx, resp.RetryAfterMs) {
			return
		}
	}
}

// pauseUnheld waits retryAfterMs when the tenant answered an empty claim
// that asked to wait at once rather than hold it (it holds as many claims
// as it may: api.MaxHeldClaims): claiming again at once would spin. False
// if ctx ended first.
func (w *Worker) pauseUnheld(ctx context.Context, retryAfterMs int64) bool {
	if retryAfterMs <= 0 {
		return ctx.Err() == nil
	}
	done, stop := w.cfg.Clock.After(time.Duration(retryAfterMs) * time.Millisecond)
	defer stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// takeSlots takes one handler slot (blocking), then as many more as are
// free, up to api.MaxClaim; 0 if ctx ended first.
func (w *Worker) takeSlots(ctx context.Context) int {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < api.MaxClaim {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

func (w *Worker) releaseSlots(n int) {
	for range n {
		w.freeSlot()
	}
}

// freeSlot gives a slot back and tells a Drain waiting for one.
func (w *Worker) freeSlot() {
	<-w.slots
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// startJobs runs each claimed job on one of the slots taken for the claim.
func (w *Worker) startJobs(hctx context.Context, ten *client.Tenant, resp api.ClaimResponse, received time.Time, jobs *runGroup) {
	for _, c := range resp.Jobs {
		jobs.add()
		go func() {
			defer jobs.done()
			defer w.freeSlot()
			w.run(hctx, ten, c, received.Add(c.LeaseUntil.Sub(resp.Now)))
		}()
	}
}

// waitAfter waits out a failed claim's backoff (doubling from 100 ms to
// 10 s); false if ctx ended first.
func (w *Worker) waitAfter(ctx context.Context, backoff *time.Duration, msg, tenant string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	*backoff = min(max(*backoff*2, 100*time.Millisecond), 10*time.Second)
	w.log.Warn(msg, "tenant", tenant, "in", *backoff, "err", err)
	select {
	case <-time.After(*backoff):
		return true
	case <-ctx.Done():
		return false
	}
}

// run executes one claimed job: handler, heartbeats, report.
func (w *Worker) run(hctx context.Context, ten *client.Tenant, c api.ClaimedJob, deadline time.Time) api.ReportRequest {
	w.mu.Lock()
	h := w.handlers[c.Kind]
	w.mu.Unlock()
	claim := api.Claim{Worker: w.cfg.ID, Attempt: c.Attempt, LeaseToken: c.LeaseToken}
	log := &lazyLog{base: w.log, tenant: ten.Name(), job: c.ID, kind: c.Kind, attempt: c.Attempt}

	ctx, cancel := context.WithCancelCause(hctx)
	defer cancel(nil)
	var timeoutAt time.Time
	if c.TimeoutMs > 0 {
		var stop context.CancelFunc
		timeoutAt = deadline.Add(time.Duration(c.TimeoutMs-c.LeaseMs)*time.Millisecond - reportTime(c.TimeoutMs))
		ctx, stop = w.withDeadline(ctx, timeoutAt, ErrTimeout)
		defer stop()
	}
	lease := &leaseClock{deadline: deadline}
	job := &Job{JobContext: JobContext{JobID: c.ID, Attempt: c.Attempt, Deadline: deadline}, Tenant: ten.Name(),
		Kind: c.Kind, Queue: c.Queue, Args: c.Args, AllArgs: c.AllArgs, MaxAttempts: c.MaxAttempts, Failures: c.Failures, Tags: c.Tags}
	job.publish = func(pctx context.Context, progress json.RawMessage) error {
		sent := w.cfg.Clock.Now()
		hb, err := ten.HeartbeatProgress(pctx, c.ID, claim, progress)
		switch {
		case errors.Is(err, api.ErrStale):
			cancel(fmt.Errorf("%w: %v", ErrLeaseLost, err))
			return fmt.Errorf("progress: %w: %v", ErrLeaseLost, err)
		case err != nil:
			return fmt.Errorf("progress: %w", err)
		}
		lease.set(sent.Add(hb.LeaseUntil.Sub(hb.Now)))
		if hb.CancelRequested {
			cancel(ErrCancelled)
		}
		return nil
	}

	// The tracer's span (Config.Tracer) is the handler's context: its
	// requests, the heartbeats and the report are its children.
	ended := func(api.ReportRequest, time.Duration, error) {}
	if w.cfg.Tracer != nil {
		ctx, ended = w.cfg.Tracer.StartJob(ctx, job, c.Traceparent)
	}
	stopBeats := w.heartbeats(ctx, cancel, ten, c, claim, lease, timeoutAt, log)
	began := time.Now()
	output, herr := call(ctx, h, job)
	ran := time.Since(began)
	if w.cfg.Pacer != nil {
		w.cfg.Pacer.Ran(ran)
	}
	stopBeats()

	// After a lost lease the store refuses the report; it is sent anyway,
	// so the refusal is on record and a duplicate delivery visible.
	cause := context.Cause(ctx)
	report := reportOf(job, output, herr, cause, c.TimeoutMs)
	report.Claim = claim
	err := w.report(ctx, ten, c.ID, report, lease)
	log.line(jobLine(report, herr, cause, err))
	ended(report, ran, err)
	w.signals.AttemptEnded.signal(attemptEnd{JobID: c.ID, Attempt: c.Attempt, Outcome: report.Outcome})
	return report
}

// reportTime is how much sooner than the tenant's time limit a worker
// cuts a handler: the tenant ends the attempt's lease at the limit, so a
// report sent only then arrives after it and is refused, and the attempt
// is recorded as a lapsed lease instead of what the handler returned. A
// tenth of the limit, at most a second.
func reportTime(timeoutMs int64) time.Duration {
	return min(time.Duration(timeoutMs)*time.Millisecond/10, time.Second)
}

// reportOf turns what a handler returned (and why its context ended, if
// it did) into the report a worker sends, without its claim.
func reportOf(job *Job, output any, herr, cause error, timeoutMs int64) api.ReportRequest {
	report := api.ReportRequest{Outcome: api.OutcomeCompleted, Tags: job.tags()}
	var sn *snooze
	var fin *final
	switch {
	case herr == nil:
	case errors.As(herr, &sn):
		report.Outcome, report.SnoozeMs = api.OutcomeSnoozed, max(sn.d.Milliseconds(), 0)
	case errors.Is(cause, ErrCancelled):
		report.Outcome, report.Error = api.OutcomeCancelled, herr.Error()
	case errors.Is(cause, ErrShutdown):
		report.Outcome = api.OutcomeSnoozed // released: it runs again at once, no budget spent
	case errors.As(herr, &fin):
		report.Outcome, report.Error, report.Final = api.OutcomeFailed, herr.Error(), true
	case errors.Is(cause, ErrTimeout):
		report.Outcome, report.Error = api.OutcomeFailed, fmt.Sprintf("timed out after %d ms: %v", timeoutMs, herr)
	default:
		report.Outcome, report.Error = api.OutcomeFailed, herr.Error()
	}
	if herr == nil && output != nil {
		b, err := json.Marshal(output)
		if err != nil {
			report.Outcome, report.Error = api.OutcomeFailed, fmt.Sprintf("marshal output: %v", err)
		} else {
			report.Output = b
		}
	}
	return report
}

// call runs the handler, turning a panic into a failure with its stack.
func call(ctx context.Context, h Handler, job *Job) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return h(ctx, job)
}

// leaseClock tracks the local lease deadline as heartbeats move it.
type leaseClock struct {
	mu       sync.Mutex
	deadline time.Time
}

func (l *leaseClock) get() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *leaseClock) set(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = t
}

// heartbeats extends the job's lease every third of it until the stop it
// returns is called, and cancels the handler when the lease is lost or runs
// out locally. Its first wait is a timer (afterFunc): a job that ends before
// its first heartbeat is due, as most do, takes no goroutine for it. stop
// waits for a heartbeat under way.
func (w *Worker) heartbeats(ctx context.Context, cancel context.CancelCauseFunc, ten *client.Tenant,
	c api.ClaimedJob, claim api.Claim, lease *leaseClock, timeoutAt time.Time, log *lazyLog) (stop func()) {
	every := time.Duration(c.LeaseMs) * time.Millisecond / 3
	ended := make(chan struct{})
	var loop sync.WaitGroup
	loop.Add(1)
	notYet := w.afterFunc(w.beatWait(every, lease), func() {
		defer loop.Done()
		w.heartbeat(ctx, cancel, ten, c, claim, lease, timeoutAt, every, ended, log)
	})
	w.signals.HeartbeatWaiting.signal(c.ID)
	return func() {
		if notYet() {
			loop.Done()
		}
		close(ended)
		loop.Wait()
	}
}

// beatWait is a heartbeat loop's wait on the clock: until the next
// heartbeat, or the lease's end if that comes first.
func (w *Worker) beatWait(every time.Duration, lease *leaseClock) time.Duration {
	return min(every, lease.get().Sub(w.cfg.Clock.Now()))
}

// heartbeat is a job's heartbeat loop (heartbeats), from the end of its
// first wait until ended or the handler's context ends.
func (w *Worker) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, ten *client.Tenant,
	c api.ClaimedJob, claim api.Claim, lease *leaseClock, timeoutAt time.Time, every time.Duration, ended <-chan struct{}, log *lazyLog) {
	for {
		select {
		case <-ended:
			return
		case <-ctx.Done():
			return
		default:
		}
		if now := w.cfg.Clock.Now(); !now.Before(lease.get()) {
			if !timeoutAt.IsZero() && !now.Before(timeoutAt) {
				return // the lease ends with the time limit, whose context says so
			}
			cancel(fmt.Errorf("%w: the lease ran out without a successful heartbeat", ErrLeaseLost))
			return
		}
		rctx, rcancel := context.WithTimeout(ctx, max(every, time.Second))
		sent := w.cfg.Clock.Now()
		hb, err := ten.Heartbeat(rctx, c.ID, claim)
		rcancel()
		switch {
		case errors.Is(err, api.ErrStale):
			// The attempt's line, once the handler returned, says more.
			log.get().Info("lease lost; cancelling the handler", "code", client.Code(err))
			cancel(fmt.Errorf("%w: %v", ErrLeaseLost, err))
			return
		case err != nil:
			log.get().Warn("heartbeat failed; will retry", "err", err)
		default:
			lease.set(sent.Add(hb.LeaseUntil.Sub(hb.Now)))
			if hb.CancelRequested {
				log.get().Info("the job was cancelled; cancelling the handler")
				cancel(ErrCancelled)
				// Keep watching the lease: it is no longer extended.
			}
		}
		next, stopNext := w.cfg.Clock.After(w.beatWait(every, lease))
		w.signals.HeartbeatWaiting.signal(c.ID)
		select {
		case <-ended:
			stopNext()
			return
		case <-ctx.Done():
			stopNext()
			return
		case <-next:
		}
	}
}

// lazyLog is an attempt's logger (the worker's, with the attempt's
// attributes), made by its first line: most attempts log nothing at the
// worker's level, and With formats the attributes at once (and the
// attributes, as a list of values, are allocations of their own).
type lazyLog struct {
	base              *slog.Logger
	tenant, job, kind string
	attempt           int64
	once              sync.Once
	l                 *slog.Logger
}

func (l *lazyLog) get() *slog.Logger {
	l.once.Do(func() { l.l = l.base.With("tenant", l.tenant, "job", l.job, "kind", l.kind, "attempt", l.attempt) })
	return l.l
}

// line logs an attempt's line if the worker's logger takes its level.
func (l *lazyLog) line(o outcomeLine) {
	if l.base.Enabled(context.Background(), o.level) {
		o.log(l.get())
	}
}

// counting counts the requests sent through it.
type counting struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	next := c.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}
