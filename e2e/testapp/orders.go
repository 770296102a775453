package testapp

import (
	"errors"
	"fmt"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	"github.com/stile-run/stile/runtime"
)

// The order aggregate, typed end to end: its events and commands are Go
// types the module registers, so Evolve, Decide and the orders projection
// read decoded values, with no JSON handled and no stream id parsed here.

// OrderPlaced is the event of a placed order.
type OrderPlaced struct {
	Total int64  `json:"total"`
	Email string `json:"email,omitempty"`
}

// EventType implements api.EventData.
func (OrderPlaced) EventType() string { return "OrderPlaced" }

// OrderCancelled is the event of a cancelled order.
type OrderCancelled struct {
	Reason string `json:"reason,omitempty"`
}

// EventType implements api.EventData.
func (OrderCancelled) EventType() string { return "OrderCancelled" }

// PlaceOrder is the command that places an order.
type PlaceOrder struct {
	Total int64  `json:"total"`
	Email string `json:"email"`
}

// CommandType implements api.CommandData.
func (PlaceOrder) CommandType() string { return "PlaceOrder" }

// CancelOrder is the command that cancels an order.
type CancelOrder struct {
	Reason string `json:"reason,omitempty"`
}

// CommandType implements api.CommandData.
func (CancelOrder) CommandType() string { return "CancelOrder" }

// Order is the order aggregate's state.
type Order struct {
	Placed, Cancelled bool
	Total             int64
}

// OpenOrders is the query of the orders projection: open orders by id.
const OpenOrders = "open_orders"

func registerOrders(app *runtime.App) *runtime.App {
	app.RegisterEventTypes(OrderPlaced{}, OrderCancelled{}).RegisterCommandTypes(PlaceOrder{}, CancelOrder{})
	app.RegisterProjection(runtime.Projection{
		Name:   "orders",
		Events: []string{OrderPlaced{}.EventType(), OrderCancelled{}.EventType()},
		Tables: []string{`CREATE TABLE {orders} (id TEXT PRIMARY KEY, total INTEGER NOT NULL, open INTEGER NOT NULL) STRICT`},
		Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
			switch d := e.Value.(type) {
			case OrderPlaced:
				return tx.Exec(`INSERT INTO {orders} (id, total, open) VALUES (?, ?, 1)`, e.AggregateID(), d.Total)
			case OrderCancelled:
				return tx.Exec(`UPDATE {orders} SET open = 0 WHERE id = ?`, e.AggregateID())
			}
			return nil
		},
	})
	app.RegisterQuery(runtime.Query{Name: OpenOrders, Projection: "orders",
		SQL: `SELECT id, total FROM {orders} WHERE open = 1 ORDER BY id`, Columns: []string{"id", "total"}})
	return runtime.RegisterAggregate(app, runtime.Aggregate[Order]{
		Name: "order",
		Evolve: func(o Order, e api.Event) Order {
			switch d := e.Value.(type) {
			case OrderPlaced:
				o.Placed, o.Total = true, d.Total
			case OrderCancelled:
				o.Cancelled = true
			}
			return o
		},
		Decide: func(o Order, c runtime.Command) (runtime.Decision, error) {
			switch d := c.Value.(type) {
			case PlaceOrder:
				switch {
				case d.Total <= 0:
					return runtime.Decision{}, errors.New("an order's total is positive")
				case o.Placed:
					return runtime.Decision{}, errors.New("the order is placed already")
				}
				return runtime.EmitData(OrderPlaced(d)).
					EnqueueArgs(receipt.Receipt{Order: c.AggregateID, Cents: d.Total}, api.EnqueueRequest{Tags: []string{"placed"}}), nil
			case CancelOrder:
				if !o.Placed || o.Cancelled {
					return runtime.Decision{}, errors.New("no open order to cancel")
				}
				return runtime.EmitData(OrderCancelled(d)), nil
			}
			return runtime.Decision{}, fmt.Errorf("unknown command %q: use PlaceOrder or CancelOrder", c.Type)
		},
	})
}
