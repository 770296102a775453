package refunds_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/examples/refunds"
	"github.com/stile-run/stile/examples/refunds/handler"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// The refund policy alone: a fake delivery of RefundRequested, and the
// command it dispatches, with the delivery's key sent to the provider.
func TestRefundPolicyDispatchesRecordRefund(t *testing.T) {
	prov := &provider{refunds: map[string]string{}}
	prov.calls = 1 // past the lost first answer of the Example's provider
	ev := api.Event{Seq: 2, Stream: "payment:p1", Type: refunds.RefundRequested, Data: json.RawMessage(`{"amount":4200}`)}
	s := stiletest.Deliver(t, handler.Refund(prov), stiletest.Delivery{Handler: refunds.RefundPolicy, Event: ev})
	require.Equal(t, api.OutcomeSucceeded, s.Outcome, s.Error)
	require.Len(t, s.Commands, 1)
	require.Equal(t, "RecordRefund", s.Commands[0].Type)
	require.JSONEq(t, `{"refund_id":"re_1"}`, string(s.Commands[0].Data))
	require.Len(t, prov.refunds, 1, "one refund, under the delivery's idempotency key")
}

// The whole story in one test: the policy runs in the test, its command
// is stored, the projection and its query see the refund.
func TestRefundStory(t *testing.T) {
	prov := &provider{refunds: map[string]string{}}
	prov.calls = 1
	h := stiletest.New(t, stiletest.Config{App: refunds.App(), Handlers: func(w *worker.Worker) {
		w.HandleReaction(refunds.RefundPolicy, handler.Refund(prov))
	}})
	ctx := context.Background()
	acme := h.Tenant("acme")
	_, err := acme.Command(ctx, api.Command{ID: "pay-1", Aggregate: "payment", AggregateID: "p1", Type: "Pay", Data: json.RawMessage(`{"amount":4200}`)})
	require.NoError(t, err)
	_, err = acme.Command(ctx, api.Command{ID: "refund-1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	require.NoError(t, err)

	ran := h.WorkAll(t)
	require.Len(t, ran, 1)
	require.Equal(t, refunds.RefundPolicy, ran[0].Reaction)
	h.RequireEvent(t, refunds.Refunded, map[string]string{"refund_id": "re_1"})
	require.Equal(t, []map[string]any{{"payment": "p1", "amount": float64(4200), "refund_id": "re_1"}},
		h.Query(t, refunds.RefundedQuery, nil))
}
