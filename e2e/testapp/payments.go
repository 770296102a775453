package testapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	"github.com/stile-run/stile/runtime"
)

// Payment is the state of the test aggregate of the refund story.
type Payment struct {
	Created, RefundRequested, Captured, Expired bool
	Amount                                      int64
	RefundID                                    string
}

// Payment command and event types.
const (
	PaymentCreated  = "PaymentCreated"
	RefundRequested = "RefundRequested"
	RefundRecorded  = "RefundRecorded"
	PaymentCaptured = "PaymentCaptured"
	PaymentExpired  = "PaymentExpired"
	Noted           = "Noted" // appended raw, for the audit policy
)

// Reaction names and their time limits.
const (
	RefundPolicy    = "refund"
	AuditPolicy     = "audit"
	ExpiryProcess   = "expiry"
	ReactionTimeout = 500 * time.Millisecond // a claim holds each delivery 1 s
	// BulkTimeout is the time limit the bulk aggregate sets for the
	// policies reacting to its events (the audit policy's Noted).
	BulkTimeout = 3 * ReactionTimeout
)

func event(typ string, v any) api.NewEvent {
	b, _ := json.Marshal(v)
	return api.NewEvent{Type: typ, Data: b}
}

func registerPayments(app *runtime.App) *runtime.App {
	runtime.RegisterAggregate(app, runtime.Aggregate[Payment]{
		Name: "payment",
		Evolve: func(p Payment, e api.Event) Payment {
			var d struct {
				Amount   int64  `json:"amount"`
				RefundID string `json:"refund_id"`
			}
			_ = json.Unmarshal(e.Data, &d)
			switch e.Type {
			case PaymentCreated:
				p.Created, p.Amount = true, d.Amount
			case RefundRequested:
				p.RefundRequested = true
			case RefundRecorded:
				p.RefundID = d.RefundID
			case PaymentCaptured:
				p.Captured = true
			case PaymentExpired:
				p.Expired = true
			}
			return p
		},
		Decide: func(p Payment, c runtime.Command) (runtime.Decision, error) {
			var d struct {
				Amount   int64  `json:"amount"`
				RefundID string `json:"refund_id"`
				// Provider is passed on to the payment's reactions (a
				// provider double the test watches).
				Provider string `json:"provider"`
			}
			if len(c.Data) > 0 {
				if err := json.Unmarshal(c.Data, &d); err != nil {
					return runtime.Decision{}, fmt.Errorf("data: %w", err)
				}
			}
			switch c.Type {
			case "Create", "CreateWithReceipt", "CreateWithTypedReceipt":
				if p.Created {
					return runtime.Decision{}, errors.New("the payment exists")
				}
				dec := runtime.Emit(event(PaymentCreated, struct {
					Amount   int64  `json:"amount"`
					Provider string `json:"provider,omitempty"`
				}{d.Amount, d.Provider}))
				switch c.Type {
				case "CreateWithReceipt":
					dec = dec.Enqueue(api.EnqueueRequest{Kind: "test.echo", Args: c.Data, Tags: []string{"receipt"}})
				case "CreateWithTypedReceipt":
					dec = dec.EnqueueArgs(receipt.Receipt{Order: c.AggregateID, Cents: d.Amount}, api.EnqueueRequest{Tags: []string{"receipt"}})
				}
				return dec, nil
			case "Nudge":
				// A job per nudge, collapsed by a debounce of the payment:
				// the handler gets every nudge's data.
				return runtime.Decision{}.Enqueue(api.EnqueueRequest{Kind: "test.echo", Args: c.Data,
					Debounce: &api.Debounce{Key: "nudge-" + c.AggregateID, WindowMs: 1000, Keep: "all"}}), nil
			case "RequestRefund":
				if !p.Created || p.RefundRequested {
					return runtime.Decision{}, errors.New("no payment to refund, or a refund was requested already")
				}
				return runtime.Emit(event(RefundRequested, map[string]int64{"amount": p.Amount})), nil
			case "RecordRefund":
				if p.RefundID != "" {
					return runtime.Decision{}, fmt.Errorf("refund %s is recorded already", p.RefundID)
				}
				return runtime.Emit(event(RefundRecorded, map[string]string{"refund_id": d.RefundID})), nil
			case "Capture":
				if !p.Created || p.Expired || p.Captured {
					return runtime.Decision{}, errors.New("nothing to capture")
				}
				return runtime.Emit(event(PaymentCaptured, struct{}{})), nil
			case "Expire":
				if p.Captured || p.Expired {
					return runtime.Emit(), nil // nothing to do
				}
				return runtime.Emit(event(PaymentExpired, struct{}{})), nil
			case "Explode":
				panic("the aggregate exploded")
			}
			return runtime.Decision{}, fmt.Errorf("unknown command type %q", c.Type)
		},
	})
	// bulk:<id> streams get Noted events by command; reacting to them takes
	// longer, as the aggregate says.
	runtime.RegisterAggregate(app, runtime.Aggregate[struct{}]{Name: "bulk", PolicyTimeout: BulkTimeout,
		Decide: func(_ struct{}, c runtime.Command) (runtime.Decision, error) {
			return runtime.Emit(api.NewEvent{Type: Noted, Data: c.Data}), nil
		}})
	fast := func() (time.Duration, time.Duration) { return 200 * time.Millisecond, time.Second }
	b, mb := fast()
	return app.
		RegisterPolicy(runtime.Policy{Name: RefundPolicy, Events: []string{RefundRequested},
			Timeout: ReactionTimeout, Backoff: b, MaxBackoff: mb}).
		RegisterPolicy(runtime.Policy{Name: AuditPolicy, Events: []string{PaymentCreated, Noted},
			Timeout: ReactionTimeout, Backoff: b, MaxBackoff: mb, Batch: 5}).
		RegisterProcess(runtime.Process{Name: ExpiryProcess, Events: []string{PaymentCreated, PaymentCaptured},
			Timeout: ReactionTimeout, Backoff: b, MaxBackoff: mb,
			Correlate: func(e api.Event) (string, error) {
				id, ok := strings.CutPrefix(e.Stream, "payment:")
				if !ok {
					return "", fmt.Errorf("event %d is not a payment's", e.Seq)
				}
				return id, nil
			}})
}
