package host_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/stiletest"
)

// A command on a stream past the 100,000 events a command used to fold at
// most is decided like any other (the fold reads the stream in pages): here
// the payment aggregate refuses it on its own terms, and nothing is written.
func TestACommandOnAStreamOfOver100000EventsIsDecided(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := newHarness(t, stiletest.Config{DataDir: dir}).Manager()
	require.Less(t, call(t, m, "acme", "PUT", "", nil).Status, 300) // creates the tenant

	sq, err := dosql.Open(filepath.Join(dir, "tenants", "acme.sqlite"))
	require.NoError(t, err)
	params, err := do.EncodeParams(nil, 100_001)
	require.NoError(t, err)
	_, err = sq.Query(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
		INSERT INTO stile_events (stream, version, type, data, at) SELECT 'payment:big', i, 'Noted', 'null', 0 FROM n`, params)
	require.NoError(t, err)
	require.NoError(t, sq.Close())

	resp := call(t, m, "acme", "POST", "commands", api.Command{ID: "c1", Aggregate: "payment", AggregateID: "big", Type: "Capture"})
	require.Equal(t, 422, resp.Status, string(resp.Body))
	var e api.Error
	require.NoError(t, json.Unmarshal(resp.Body, &e))
	require.Equal(t, api.CodeCommandRejected, e.Code)
	require.Equal(t, "payment Capture on payment:big refused: nothing to capture", e.Message, "the aggregate decided, over all 100,001 events")
	resp = call(t, m, "acme", "GET", "commands/c1", nil)
	require.Equal(t, 404, resp.Status, "nothing written")
}
