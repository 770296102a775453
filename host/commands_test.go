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

// A command on a stream longer than an aggregate without snapshots folds is
// refused with a message that says what to do, and writes nothing.
func TestACommandOnAnOverlongStreamIsRefused(t *testing.T) {
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
	require.Contains(t, e.Message, "stream payment:big has more than 100000 events, more than an aggregate without snapshots folds for a command: set Aggregate.Snapshots")
	resp = call(t, m, "acme", "GET", "commands/c1", nil)
	require.Equal(t, 404, resp.Status, "nothing written")
}
