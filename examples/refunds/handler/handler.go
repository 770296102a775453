// Package handler is the example's refund policy handler, run by a worker.
//
// It sends the delivery's idempotency key with the provider call. If the
// attempt dies after the provider refunded and before it settles, the next
// attempt sends the same key and the provider answers with the refund it
// made: the refund happens once although the handler ran twice.
package handler

import (
	"context"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/examples/refunds"
	"github.com/stile-run/stile/worker"
)

// Provider refunds payments, once per idempotency key.
type Provider interface {
	Refund(ctx context.Context, idempotencyKey, payment string, amount int64) (refundID string, err error)
}

// Refund returns the handler of refunds.RefundPolicy.
func Refund(p Provider) worker.ReactionHandler {
	return func(ctx context.Context, r *worker.Reaction) error {
		d, err := api.DecodeEvent[refunds.RefundRequestedEvent](r.Event)
		if err != nil {
			return err
		}
		payment := r.Event.AggregateID()
		id, err := p.Refund(ctx, r.IdempotencyKey, payment, d.Amount)
		if err != nil {
			return err // failed: retried after the backoff, with the same key
		}
		record, err := api.CommandOf("", "payment", payment, refunds.RecordRefund{RefundID: id})
		if err != nil {
			return err
		}
		// Committed with the delivery's success mark, or not at all.
		r.Dispatch(record)
		return nil
	}
}
