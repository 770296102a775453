package refunds

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Receipt is a receipt job's args.
type Receipt struct {
	Payment string `json:"payment"`
}

// Payment is the payment aggregate's state.
type Payment struct {
	Amount          int64
	RefundRequested bool
	RefundID        string
}

// Data is the data of the payment's events and commands.
type Data struct {
	Amount   int64  `json:"amount,omitempty"`
	RefundID string `json:"refund_id,omitempty"`
}

// Event builds an event with d as its data.
func Event(typ string, d Data) api.NewEvent {
	b, _ := json.Marshal(d)
	return api.NewEvent{Type: typ, Data: b}
}

// App registers the payment aggregate (commands Pay, RequestRefund,
// RecordRefund), the refund policy, the receipt job and the refunds
// projection with its query.
func App() *runtime.App {
	app := runtime.NewApp().RegisterPolicy(runtime.Policy{Name: RefundPolicy, Events: []string{RefundRequested},
		Timeout: 10 * time.Second, Backoff: time.Second}).
		RegisterJob(runtime.JobKind{Name: ReceiptJob, MaxAttempts: 5, Validate: func(args json.RawMessage) error {
			var r Receipt
			if err := json.Unmarshal(args, &r); err != nil || r.Payment == "" {
				return errors.New(`args must be {"payment": "<id>"}`)
			}
			return nil
		}})
	app.RegisterProjection(runtime.Projection{
		Name:   RefundsProjection,
		Events: []string{RefundRequested, Refunded},
		Tables: []string{`CREATE TABLE {refunds} (payment TEXT PRIMARY KEY, amount INTEGER NOT NULL, refund_id TEXT) STRICT`},
		Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
			var d Data
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return err
			}
			payment := strings.TrimPrefix(e.Stream, "payment:")
			if e.Type == RefundRequested {
				return tx.Exec(`INSERT INTO {refunds} (payment, amount) VALUES (?, ?)`, payment, d.Amount)
			}
			return tx.Exec(`UPDATE {refunds} SET refund_id = ? WHERE payment = ?`, d.RefundID, payment)
		},
	})
	app.RegisterQuery(runtime.Query{Name: RefundedQuery, Projection: RefundsProjection,
		SQL: `SELECT payment, amount, refund_id FROM {refunds} ORDER BY payment`, Columns: []string{"payment", "amount", "refund_id"}, MaxRows: 1000})
	return runtime.RegisterAggregate(app, runtime.Aggregate[Payment]{
		Name: "payment",
		Evolve: func(p Payment, e api.Event) Payment {
			var d Data
			_ = json.Unmarshal(e.Data, &d)
			switch e.Type {
			case Paid:
				p.Amount = d.Amount
			case RefundRequested:
				p.RefundRequested = true
			case Refunded:
				p.RefundID = d.RefundID
			}
			return p
		},
		Decide: func(p Payment, c runtime.Command) (runtime.Decision, error) {
			var d Data
			if len(c.Data) > 0 {
				if err := json.Unmarshal(c.Data, &d); err != nil {
					return runtime.Decision{}, fmt.Errorf("data: %w", err)
				}
			}
			switch c.Type {
			case "Pay":
				if p.Amount > 0 || d.Amount <= 0 {
					return runtime.Decision{}, errors.New("paid already, or no amount")
				}
				return runtime.Emit(Event(Paid, Data{Amount: d.Amount})), nil
			case "RequestRefund":
				if p.Amount == 0 || p.RefundRequested {
					return runtime.Decision{}, errors.New("nothing to refund")
				}
				return runtime.Emit(Event(RefundRequested, Data{Amount: p.Amount})), nil
			case "RecordRefund":
				if p.RefundID != "" {
					return runtime.Decision{}, fmt.Errorf("refund %s is recorded already", p.RefundID)
				}
				return runtime.Emit(Event(Refunded, Data{RefundID: d.RefundID})), nil
			}
			return runtime.Decision{}, fmt.Errorf("unknown command %q", c.Type)
		},
	})
}
