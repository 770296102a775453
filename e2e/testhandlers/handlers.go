package testhandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stile-run/stile/api"
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
}

// RefundPolicy is testapp.RefundPolicy, spelt out: importing the tenant
// module's package would link all of package runtime into the executor.
const RefundPolicy = "refund"

// Register adds the handlers to w: the handler contract `stile build
// --handlers` compiles into an executor.
func Register(w *worker.Worker) {
	w.Handle("test.echo", echo)
	w.Handle("test.fast", echo)
	w.Handle("test.hang", echo)
	w.HandleReaction(RefundPolicy, refund)
}

func echo(ctx context.Context, j *worker.Job) (any, error) {
	var a Args
	if len(j.Args) > 0 && string(j.Args) != "null" {
		if err := j.Decode(&a); err != nil {
			return nil, worker.Final(err)
		}
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
