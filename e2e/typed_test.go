package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
)

// scenarioTypedEventsAndCommands: the order aggregate's events and
// commands are Go types. A typed command and an untyped one with the same
// JSON are decided alike; an event appended untyped (as a module without
// the types wrote it) is folded by the typed Evolve; data that does not
// decode into the registered type is refused where it comes in, naming
// the type, and writes nothing. The projection reads decoded values and the
// aggregate id from the event.
func scenarioTypedEventsAndCommands(s *scenario) {
	t := s.t
	place, err := api.CommandOf("place-o1", "order", "o1", testapp.PlaceOrder{Total: 500, Email: "ada@example.com"})
	require.NoError(t, err)
	placed := s.command(place)
	require.Equal(t, api.StreamOf("order", "o1"), placed.Stream)
	require.Len(t, placed.Events, 1)
	require.Equal(t, "OrderPlaced", placed.Events[0].Type)
	require.JSONEq(t, `{"total":500,"email":"ada@example.com"}`, string(placed.Events[0].Data), "the JSON an untyped module writes")
	require.Equal(t, "o1", placed.Events[0].AggregateID())
	require.Equal(t, "order", placed.Events[0].Aggregate())
	require.Len(t, placed.JobIDs, 1)
	require.JSONEq(t, `{"order":"o1","cents":500}`, string(s.job(placed.JobIDs[0]).Args), "typed job args from a decision")

	s.command(api.Command{ID: "place-o2", Aggregate: "order", AggregateID: "o2", Type: "PlaceOrder", Data: json.RawMessage(`{"total":7}`)})
	_, err = s.ten.Append(s.ctx, api.StreamOf("order", "o3"), api.AppendRequest{Events: []api.NewEvent{{Type: "OrderPlaced", Data: json.RawMessage(`{"total":3}`)}}})
	require.NoError(t, err)
	cancel, err := api.CommandOf("cancel-o3", "order", "o3", testapp.CancelOrder{Reason: "changed my mind"})
	require.NoError(t, err)
	cancelled := s.command(cancel)
	require.JSONEq(t, `{"reason":"changed my mind"}`, string(cancelled.Events[0].Data))
	_, err = s.ten.Command(s.ctx, api.Command{ID: "cancel-o3-again", Aggregate: "order", AggregateID: "o3", Type: "CancelOrder"})
	requireCode(t, err, http.StatusUnprocessableEntity, api.CodeCommandRejected)

	_, err = s.ten.Command(s.ctx, api.Command{ID: "place-o4", Aggregate: "order", AggregateID: "o4", Type: "PlaceOrder", Data: json.RawMessage(`{"total":"ten"}`)})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	require.ErrorContains(t, err, "command place-o4: PlaceOrder data does not decode into testapp.PlaceOrder")
	_, err = s.ten.Append(s.ctx, api.StreamOf("order", "o4"), api.AppendRequest{Events: []api.NewEvent{{Type: "OrderPlaced", Data: json.RawMessage(`{"total":"ten"}`)}}})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	require.ErrorContains(t, err, "OrderPlaced data does not decode into testapp.OrderPlaced")
	require.Empty(t, s.stream(api.StreamOf("order", "o4")), "refused data writes nothing")

	res, err := s.ten.QueryAtLeast(s.ctx, testapp.OpenOrders, nil, cancelled.Events[0].Seq)
	require.NoError(t, err)
	require.Len(t, res.Rows, 2)
	require.JSONEq(t, `{"id":"o1","total":500}`, string(res.Rows[0]))
	require.JSONEq(t, `{"id":"o2","total":7}`, string(res.Rows[1]))
}

// A module moved from untyped to typed events serves the events the
// untyped one stored. One whose data the typed module cannot decode is
// reported with its seq where it is read: a command on its
// aggregate fails with it (500, nothing written), and the projection that
// reads it stalls at it. Nothing panics.
func TestATypedModuleReadsStoredEventsAndNamesTheOnesItCannot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	untyped, err := stiletest.Start(stiletest.Config{App: runtime.NewApp(), DataDir: dir, Logger: quietLog})
	require.NoError(t, err)
	written, err := untyped.Tenant("acme").Append(ctx, api.StreamOf("order", "o9"),
		api.AppendRequest{Events: []api.NewEvent{{Type: "OrderPlaced", Data: json.RawMessage(`{"total":"ten"}`)}}})
	require.NoError(t, err)
	_, err = untyped.Tenant("acme").Append(ctx, api.StreamOf("order", "o8"),
		api.AppendRequest{Events: []api.NewEvent{{Type: "OrderPlaced", Data: json.RawMessage(`{"total":8,"email":"a@b.c"}`)}}})
	require.NoError(t, err)
	untyped.Close()

	h := stiletest.New(t, stiletest.Config{App: testapp.App(), DataDir: dir, Logger: quietLog})
	ten := h.Tenant("acme")
	// What the untyped module wrote and the types read, the typed one
	// serves: o8 is placed, so it can be cancelled once.
	cancel, err := api.CommandOf("cancel-o8", "order", "o8", testapp.CancelOrder{})
	require.NoError(t, err)
	_, err = ten.Command(ctx, cancel)
	require.NoError(t, err)
	cancel.ID = "cancel-o8-again"
	_, err = ten.Command(ctx, cancel)
	require.Equal(t, api.CodeCommandRejected, client.Code(err), "the untyped module's OrderPlaced was folded")
	_, err = ten.Command(ctx, api.Command{ID: "cancel-o9", Aggregate: "order", AggregateID: "o9", Type: "CancelOrder"})
	require.Error(t, err)
	var ce *api.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusInternalServerError, ce.Status)
	require.Equal(t, api.CodeEventUndecodable, ce.Code)
	require.Contains(t, ce.Message, "event 1 (OrderPlaced) on order:o9: data does not decode into testapp.OrderPlaced")
	_, err = ten.GetCommand(ctx, "cancel-o9")
	require.Equal(t, api.CodeNotFound, client.Code(err), "the failed command wrote nothing")

	_, err = ten.Query(ctx, testapp.OpenOrders, url.Values{api.MinSeqParam: {"1"}})
	require.Equal(t, api.CodeProjectionBehind, client.Code(err))
	require.ErrorContains(t, err, "projection orders is stalled at event 1")
	require.ErrorContains(t, err, "(event 1 (OrderPlaced): data does not decode into testapp.OrderPlaced: json: cannot unmarshal")
	require.Equal(t, int64(1), written.FirstSeq)
}
