package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/stile-run/stile/examples/refunds"
	"github.com/stile-run/stile/worker"
)

// ProviderURLEnv names the environment variable holding the payment
// provider's URL: a Worker var at the edge (the executor makes vars the
// environment), the environment of `stile dev --handlers` locally.
const ProviderURLEnv = "REFUNDS_PROVIDER_URL"

// Register is the handler contract `stile dev --handlers` and `stile
// build --handlers` compile: the refund policy and the receipt job, over
// the HTTP provider at $REFUNDS_PROVIDER_URL.
func Register(w *worker.Worker) {
	p := HTTPProvider{URL: w.Getenv(ProviderURLEnv)}
	w.HandleReaction(refunds.RefundPolicy, Refund(p))
	worker.Handle(w, Receipt(p))
}

// HTTPProvider is a payment provider over HTTP: POST {URL}/refunds and
// {URL}/receipts, each with an Idempotency-Key header, answering JSON.
type HTTPProvider struct {
	URL    string
	Client *http.Client // default http.DefaultClient
}

// Refund implements Provider.
func (p HTTPProvider) Refund(ctx context.Context, key, payment string, amount int64) (string, error) {
	var out struct {
		RefundID string `json:"refund_id"`
	}
	err := p.post(ctx, "/refunds", key, map[string]any{"payment": payment, "amount": amount}, &out)
	return out.RefundID, err
}

// Send posts a receipt, once per key.
func (p HTTPProvider) Send(ctx context.Context, key, payment string) (string, error) {
	var out struct {
		ReceiptID string `json:"receipt_id"`
	}
	err := p.post(ctx, "/receipts", key, map[string]any{"payment": payment}, &out)
	return out.ReceiptID, err
}

func (p HTTPProvider) post(ctx context.Context, path, key string, in, out any) error {
	if p.URL == "" {
		return errors.New(ProviderURLEnv + " is not set: the handlers do not know the provider")
	}
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	hc := p.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("call the provider: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the provider answered %s: %s", resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

// Receipt returns the handler of refunds.ReceiptJob: it sends the receipt
// with the job's id as the idempotency key, the same on every attempt.
func Receipt(p HTTPProvider) func(context.Context, *worker.JobOf[refunds.Receipt]) (any, error) {
	return func(ctx context.Context, j *worker.JobOf[refunds.Receipt]) (any, error) {
		id, err := p.Send(ctx, j.Tenant+"/"+j.JobID, j.Args.Payment)
		if err != nil {
			return nil, err
		}
		return map[string]string{"receipt_id": id}, nil
	}
}
