package testhandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	"github.com/stile-run/stile/worker"
)

// Args of test.echo when the test wants a provider called: the handler
// posts to URL with the job's id as the idempotency key, and returns what
// the provider answered.
type Args struct {
	Provider string `json:"provider,omitempty"`
	// Hang makes the first attempt call the provider, then wait until its
	// context ends (the test kills the invocation meanwhile).
	Hang bool `json:"hang,omitempty"`
	// SleepMs makes the handler take that long (or until its context
	// ends): a slow job.
	SleepMs int `json:"sleep_ms,omitempty"`
	// FailTimes makes the first attempts fail, that many.
	FailTimes int64 `json:"fail_times,omitempty"`
	// Credential makes the output tell what the handler code finds as
	// STILE_TOKEN in its environment.
	Credential bool `json:"credential,omitempty"`
}

// RefundPolicy, AuditPolicy and ExpiryProcess are testapp's, spelt out:
// importing the tenant module's package would link all of package runtime
// into the executor.
const (
	RefundPolicy  = "refund"
	AuditPolicy   = "audit"
	ExpiryProcess = "expiry"
)

// NoteArgs is what the audit policy reads from a Noted event's data (a
// bulk aggregate's Note command carries it as it is).
type NoteArgs struct {
	// FailFirst fails the delivery's first attempt: it runs again after
	// the policy's backoff.
	FailFirst bool `json:"fail_first,omitempty"`
	// ScheduleMs schedules a Note command on stream bulk:scheduled that
	// long after now, whose mark is Mark + "-fired".
	ScheduleMs int64 `json:"schedule_ms,omitempty"`
	// Provider, if set, is called once the delivery succeeds, with Mark
	// as the idempotency key.
	Provider string `json:"provider,omitempty"`
	Mark     string `json:"mark,omitempty"`
}

// audit handles the audit policy: PaymentCreated and Noted events, of
// which a Noted one may ask it to fail once or to schedule a command.
func audit(ctx context.Context, r *worker.Reaction) error {
	if r.Event.Type != "Noted" {
		return nil
	}
	var n NoteArgs
	_ = json.Unmarshal(r.Event.Data, &n)
	if n.FailFirst && r.Attempt == 1 {
		return errors.New("failing the first attempt, as asked")
	}
	if n.ScheduleMs > 0 {
		data, _ := json.Marshal(NoteArgs{Mark: n.Mark + "-fired", Provider: n.Provider})
		r.Schedule(time.Now().Add(time.Duration(n.ScheduleMs)*time.Millisecond),
			api.Command{Aggregate: "bulk", AggregateID: "scheduled", Type: "Note", Data: data})
	}
	if n.Provider != "" {
		if _, err := call(ctx, n.Provider, n.Mark, r.Event.Stream); err != nil {
			return err
		}
	}
	return nil
}

// ExpireAmount is the amount of a payment whose expiry process sets a
// deadline ExpireAfter after its creation; at the deadline the process
// expires it. Other payments get no deadline.
const (
	ExpireAmount = 4242
	ExpireAfter  = 300 * time.Millisecond
)

// expiry handles the expiry process of a payment.
func expiry(ctx context.Context, r *worker.Reaction) error {
	switch {
	case r.Event.Type == "PaymentCreated":
		var d struct {
			Amount   int64  `json:"amount"`
			Provider string `json:"provider"`
		}
		_ = json.Unmarshal(r.Event.Data, &d)
		if d.Amount == ExpireAmount {
			r.SetDeadline("expire", time.Now().Add(ExpireAfter))
			return r.SetState(map[string]string{"provider": d.Provider})
		}
	case strings.HasPrefix(r.Event.Type, api.DeadlineEventPrefix):
		var f api.DeadlineFired
		if err := json.Unmarshal(r.Event.Data, &f); err != nil {
			return err
		}
		var st struct {
			Provider string `json:"provider"`
		}
		if _, err := r.DecodeState(&st); err != nil {
			return err
		}
		if st.Provider != "" {
			// The test learns of the deadline here, without calling the
			// tenant (a call would apply its due work itself).
			if _, err := call(ctx, st.Provider, "expired:"+f.Correlation, r.Event.Stream); err != nil {
				return err
			}
		}
		r.Dispatch(api.Command{Aggregate: "payment", AggregateID: f.Correlation, Type: "Expire"})
		r.Done()
	}
	return nil
}

// Register adds the handlers to w: the handler contract `stile build
// --handlers` compiles into an executor.
func Register(w *worker.Worker) {
	w.Handle("test.echo", echo)
	w.Handle("test.fast", echo)
	w.Handle("test.email", echo)
	w.Handle("test.hang", echo)
	worker.Handle(w, func(ctx context.Context, j *worker.JobOf[receipt.Receipt]) (any, error) {
		return map[string]any{"order": j.Args.Order, "cents": j.Args.Cents, "attempt": j.Attempt}, nil
	})
	// Five at a time, or what came within 2 s: each job completes with
	// the size of its batch, one whose args say "fail" fails alone.
	w.HandleBatch("test.batch", worker.Batch{Max: 5, Wait: 2 * time.Second}, func(ctx context.Context, jobs []*worker.Job) []error {
		errs := make([]error, len(jobs))
		for i, j := range jobs {
			var a struct{ Fail bool }
			_ = j.Decode(&a)
			if a.Fail && j.Attempt == 1 {
				errs[i] = errors.New("failing this one, as asked")
				continue
			}
			j.SetOutput(map[string]int64{"batch": int64(len(jobs)), "attempt": j.Attempt})
		}
		return errs
	})
	w.HandleReaction(RefundPolicy, refund)
	w.HandleReaction(AuditPolicy, audit)
	w.HandleReaction(ExpiryProcess, expiry)
}

func echo(ctx context.Context, j *worker.Job) (any, error) {
	var a Args
	if len(j.Args) > 0 && string(j.Args) != "null" {
		if err := j.Decode(&a); err != nil {
			return nil, worker.Final(err)
		}
	}
	if j.Attempt <= a.FailTimes {
		return nil, fmt.Errorf("failing attempt %d of %d, as asked", j.Attempt, a.FailTimes)
	}
	if a.SleepMs > 0 {
		select {
		case <-time.After(time.Duration(a.SleepMs) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a.Credential {
		return map[string]any{"attempt": j.Attempt, "credential": os.Getenv("STILE_TOKEN")}, nil
	}
	if a.Provider == "" {
		return map[string]any{"attempt": j.Attempt}, nil
	}
	got, err := call(ctx, a.Provider, j.JobID, j.JobID)
	if err != nil {
		return nil, err
	}
	if a.Hang && j.Attempt == 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return map[string]any{"attempt": j.Attempt, "provider": got}, nil
}

// refund calls the provider named by the payment's refund request (its
// "provider" field, if the test set one) and records the refund.
func refund(ctx context.Context, r *worker.Reaction) error {
	var req struct {
		Provider string `json:"provider"`
	}
	_ = json.Unmarshal(r.Event.Data, &req)
	id := "rf-" + r.IdempotencyKey[:8]
	if req.Provider != "" {
		got, err := call(ctx, req.Provider, r.KeyFor("refund"), r.Event.Stream)
		if err != nil {
			return err
		}
		id = got
	}
	data, _ := json.Marshal(map[string]string{"refund_id": id})
	payment, ok := strings.CutPrefix(r.Event.Stream, "payment:")
	if !ok {
		return errors.New("not a payment's event: " + r.Event.Stream)
	}
	r.Dispatch(api.Command{Aggregate: "payment", AggregateID: payment, Type: "RecordRefund", Data: data})
	return nil
}

// call posts to a provider with an idempotency key and returns its body.
func call(ctx context.Context, url, key, what string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(what))
	if err != nil {
		return "", err
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("call the provider: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read the provider's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the provider answered %d: %s", resp.StatusCode, b)
	}
	return string(b), nil
}
