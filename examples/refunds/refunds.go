package refunds

import (
	"errors"
	"fmt"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

// Event and command types, and the policy's name.
const (
	Paid            = "Paid"
	RefundRequested = "RefundRequested"
	Refunded        = "Refunded"
	RefundPolicy    = "refund"
	// ReceiptJob sends a payment's receipt; RefundsProjection keeps the
	// refunds, read by the query RefundedQuery.
	ReceiptJob        = "receipt.send"
	RefundsProjection = "refunds"
	RefundedQuery     = "refunded"
)

// Receipt is a receipt job's args (api.JobArgs).
type Receipt struct {
	Payment string `json:"payment"`
}

func (Receipt) Kind() string { return ReceiptJob }

func (r Receipt) Validate() error {
	if r.Payment == "" {
		return errors.New(`args must be {"payment": "<id>"}`)
	}
	return nil
}

// Payment is the payment aggregate's state.
type Payment struct {
	Amount          int64
	RefundRequested bool
	RefundID        string
}

// The payment's events (api.EventData) and commands (api.CommandData): the
// module registers them, so Evolve, Decide and the projection get decoded
// values, and data that does not fit them is refused.
type (
	PaidEvent struct {
		Amount int64 `json:"amount"`
	}
	RefundRequestedEvent struct {
		Amount int64 `json:"amount"`
	}
	RefundedEvent struct {
		RefundID string `json:"refund_id"`
	}
	Pay struct {
		Amount int64 `json:"amount"`
	}
	RequestRefund struct{}
	RecordRefund  struct {
		RefundID string `json:"refund_id"`
	}
)

func (PaidEvent) EventType() string            { return Paid }
func (RefundRequestedEvent) EventType() string { return RefundRequested }
func (RefundedEvent) EventType() string        { return Refunded }
func (Pay) CommandType() string                { return "Pay" }
func (RequestRefund) CommandType() string      { return "RequestRefund" }
func (RecordRefund) CommandType() string       { return "RecordRefund" }

// App registers the payment aggregate (commands Pay, RequestRefund,
// RecordRefund), the refund policy, the receipt job and the refunds
// projection with its query.
func App() *runtime.App {
	app := runtime.NewApp().RegisterPolicy(runtime.Policy{Name: RefundPolicy, Events: []string{RefundRequested},
		Timeout: 10 * time.Second, Backoff: time.Second}).
		RegisterEventTypes(PaidEvent{}, RefundRequestedEvent{}, RefundedEvent{}).
		RegisterCommandTypes(Pay{}, RequestRefund{}, RecordRefund{})
	runtime.RegisterJobArgs[Receipt](app, runtime.JobKind{MaxAttempts: 5})
	app.RegisterProjection(runtime.Projection{
		Name:   RefundsProjection,
		Events: []string{RefundRequested, Refunded},
		Tables: []string{`CREATE TABLE {refunds} (payment TEXT PRIMARY KEY, amount INTEGER NOT NULL, refund_id TEXT) STRICT`},
		Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
			switch d := e.Value.(type) {
			case RefundRequestedEvent:
				return tx.Exec(`INSERT INTO {refunds} (payment, amount) VALUES (?, ?)`, e.AggregateID(), d.Amount)
			case RefundedEvent:
				return tx.Exec(`UPDATE {refunds} SET refund_id = ? WHERE payment = ?`, d.RefundID, e.AggregateID())
			}
			return nil
		},
	})
	app.RegisterQuery(runtime.Query{Name: RefundedQuery, Projection: RefundsProjection,
		SQL: `SELECT payment, amount, refund_id FROM {refunds} ORDER BY payment`, Columns: []string{"payment", "amount", "refund_id"}, MaxRows: 1000})
	return runtime.RegisterAggregate(app, runtime.Aggregate[Payment]{
		Name: "payment",
		Evolve: func(p Payment, e api.Event) Payment {
			switch d := e.Value.(type) {
			case PaidEvent:
				p.Amount = d.Amount
			case RefundRequestedEvent:
				p.RefundRequested = true
			case RefundedEvent:
				p.RefundID = d.RefundID
			}
			return p
		},
		Decide: func(p Payment, c runtime.Command) (runtime.Decision, error) {
			switch d := c.Value.(type) {
			case Pay:
				if p.Amount > 0 || d.Amount <= 0 {
					return runtime.Decision{}, errors.New("paid already, or no amount")
				}
				return runtime.EmitData(PaidEvent(d)), nil
			case RequestRefund:
				if p.Amount == 0 || p.RefundRequested {
					return runtime.Decision{}, errors.New("nothing to refund")
				}
				return runtime.EmitData(RefundRequestedEvent{Amount: p.Amount}), nil
			case RecordRefund:
				if p.RefundID != "" {
					return runtime.Decision{}, fmt.Errorf("refund %s is recorded already", p.RefundID)
				}
				return runtime.EmitData(RefundedEvent(d)), nil
			}
			return runtime.Decision{}, fmt.Errorf("unknown command %q", c.Type)
		},
	})
}
