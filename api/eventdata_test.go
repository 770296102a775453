package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

type placed struct {
	Total int64 `json:"total"`
}

func (placed) EventType() string { return "OrderPlaced" }

type place struct {
	Total int64 `json:"total"`
}

func (place) CommandType() string { return "Place" }

func TestStreamsAreBuiltAndParsedInOnePlace(t *testing.T) {
	t.Parallel()
	require.Equal(t, "order:o-1", api.StreamOf("order", "o-1"))
	agg, id, ok := api.SplitStream("order:o-1:x")
	require.True(t, ok)
	require.Equal(t, "order", agg)
	require.Equal(t, "o-1:x", id, "an aggregate name holds no ':', an id may")
	e := api.Event{Stream: "order:o-1"}
	require.Equal(t, "o-1", e.AggregateID())
	require.Equal(t, "order", e.Aggregate())
	plain := api.Event{Stream: "audit"}
	require.Empty(t, plain.AggregateID())
	require.Empty(t, plain.Aggregate(), "a stream of no aggregate")
}

func TestTypedEventsAndCommandsCarryTheirTypeAndJSON(t *testing.T) {
	t.Parallel()
	e, err := api.NewEventOf(placed{Total: 5})
	require.NoError(t, err)
	require.Equal(t, api.NewEvent{Type: "OrderPlaced", Data: json.RawMessage(`{"total":5}`)}, e)
	_, err = api.NewEventOf(nil)
	require.EqualError(t, err, "event: no data (a nil EventData)")
	c, err := api.CommandOf("c1", "order", "o-1", place{Total: 5})
	require.NoError(t, err)
	require.Equal(t, api.Command{ID: "c1", Aggregate: "order", AggregateID: "o-1", Type: "Place", Data: json.RawMessage(`{"total":5}`)}, c)
}

func TestDecodeEventNamesTheEventItCannotDecode(t *testing.T) {
	t.Parallel()
	ev := api.Event{Seq: 7, Stream: "order:o-1", Type: "OrderPlaced", Data: json.RawMessage(`{"total":5,"new":true}`)}
	v, err := api.DecodeEvent[placed](ev)
	require.NoError(t, err)
	require.Equal(t, placed{Total: 5}, v)
	ev.Data = json.RawMessage(`{"total":"five"}`)
	_, err = api.DecodeEvent[placed](ev)
	require.EqualError(t, err, "event 7 (OrderPlaced) on order:o-1 does not decode into api_test.placed: json: cannot unmarshal string into Go struct field placed.total of type int64")
	ev.Type = "OrderCancelled"
	_, err = api.DecodeEvent[placed](ev)
	require.EqualError(t, err, "event 7 (OrderCancelled) on order:o-1 is not of type OrderPlaced")
}
