package host_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
)

// tallyApp is a module version whose tally projection counts each
// stream's T events times factor; version is the projection's Version,
// extra more tables it defines.
func tallyApp(version int, factor int64, extra ...string) *runtime.App {
	tables := []string{`CREATE TABLE {t} (stream TEXT PRIMARY KEY, n INTEGER NOT NULL) STRICT`}
	for _, name := range extra {
		tables = append(tables, `CREATE TABLE {`+name+`} (x INTEGER) STRICT`, `CREATE INDEX {`+name+`_x} ON {`+name+`} (x)`)
	}
	return runtime.NewApp().
		RegisterProjection(runtime.Projection{Name: "tally", Version: version, Events: []string{"T"},
			Tables: tables,
			Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
				return tx.Exec(`INSERT INTO {t} (stream, n) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET n = n + excluded.n`,
					e.Stream, factor)
			}}).
		RegisterQuery(runtime.Query{Name: "tally", Projection: "tally", SQL: `SELECT n FROM {t} WHERE stream = ?`,
			Params: []string{"stream"}, Columns: []string{"n"}})
}

type deployment struct {
	t    *testing.T
	dir  string
	h    *stiletest.Harness
	m    *host.Manager
	last *runtime.App
}

// deploy replaces the running module with app, over the same storage, its
// clock going on where it was.
func (d *deployment) deploy(app *runtime.App) {
	var now time.Time
	if d.h != nil {
		now = d.h.Now()
		require.NoError(d.t, d.h.Close())
	}
	d.last = app
	d.h = stiletest.New(d.t, stiletest.Config{App: app, DataDir: d.dir, Now: now})
	d.m = d.h.Manager()
}

func (d *deployment) appendT(n int) {
	for range n {
		resp := call(d.t, d.m, "acme", "POST", "streams/s1", api.AppendRequest{Events: []api.NewEvent{{Type: "T"}}})
		require.Equal(d.t, 201, resp.Status, string(resp.Body))
	}
}

func (d *deployment) tally() int64 {
	resp := call(d.t, d.m, "acme", "GET", "queries/tally?stream=s1", nil)
	require.Equal(d.t, 200, resp.Status, string(resp.Body))
	var r struct{ Rows []struct{ N int64 } }
	require.NoError(d.t, json.Unmarshal(resp.Body, &r))
	require.Len(d.t, r.Rows, 1)
	return r.Rows[0].N
}

func (d *deployment) status() api.ProjectionStatus {
	resp := call(d.t, d.m, "acme", "GET", "projections", nil)
	var r api.ProjectionsResponse
	require.NoError(d.t, json.Unmarshal(resp.Body, &r), string(resp.Body))
	require.Len(d.t, r.Projections, 1)
	return r.Projections[0]
}

func (d *deployment) fire() {
	for range 10 {
		d.h.Advance(time.Millisecond)
	}
}

// A deploy that changes a projection rebuilds it by itself: the old
// generation keeps serving reads, frozen, until the new one reaches the
// head and is swapped in; a deploy back rebuilds again; a rebuild asked
// for survives a new instance.
func TestDeployRebuildsAChangedProjection(t *testing.T) {
	t.Parallel()
	d := &deployment{t: t, dir: t.TempDir()}
	d.deploy(tallyApp(1, 1))
	d.appendT(3)
	d.fire()
	require.Equal(t, int64(3), d.tally())
	require.Equal(t, int64(1), d.status().Live.Generation)

	d.deploy(tallyApp(2, 10)) // a new definition
	st := d.status()
	require.True(t, st.Live.Outdated, "the live generation was built by the old definition")
	require.NotNil(t, st.Rebuild)
	require.Equal(t, int64(2), st.Rebuild.Generation)
	d.appendT(1)
	require.Equal(t, int64(3), d.tally(), "the outdated generation serves reads, frozen")
	d.fire()
	st = d.status()
	require.Nil(t, st.Rebuild)
	require.Equal(t, int64(2), st.Live.Generation)
	require.False(t, st.Live.Outdated)
	require.Equal(t, "current", st.Live.Status)
	require.Equal(t, int64(40), d.tally(), "every event applied once by the new definition")

	d.deploy(tallyApp(1, 1)) // rolled back
	require.Equal(t, int64(3), d.status().Rebuild.Generation)
	d.fire()
	require.Equal(t, int64(3), d.status().Live.Generation)
	require.Equal(t, int64(4), d.tally())

	// A rebuild asked for, then a new instance of the same module.
	resp := call(t, d.m, "acme", "POST", "projections/tally/rebuild", nil)
	require.Equal(t, 202, resp.Status, string(resp.Body))
	d.deploy(tallyApp(1, 1))
	require.NotNil(t, d.status().Rebuild, "the rebuild goes on in the new instance")
	d.fire()
	require.Equal(t, int64(4), d.status().Live.Generation)
	require.Equal(t, int64(4), d.tally())

	// A definition that loses a table: the old generation goes whole.
	d.deploy(tallyApp(2, 1, "extra"))
	require.NotNil(t, d.status().Rebuild) // the first request after a deploy starts it
	d.fire()
	require.Equal(t, int64(5), d.status().Live.Generation)
	require.Equal(t, []string{"p_tally_5_extra", "p_tally_5_t"}, d.tables())
	d.deploy(tallyApp(3, 1))
	require.NotNil(t, d.status().Rebuild)
	d.fire()
	require.Equal(t, int64(6), d.status().Live.Generation)
	require.Equal(t, []string{"p_tally_6_t"}, d.tables(), "generation 5's extra table went with it")
	require.Equal(t, int64(4), d.tally())
}

// tables lists the projection tables in the tenant's database (read
// with the module stopped, then started again).
func (d *deployment) tables() []string {
	require.NoError(d.t, d.h.Close())
	defer d.deploy(d.last)
	sq, err := dosql.Open(filepath.Join(d.dir, "tenants", "acme.sqlite"))
	require.NoError(d.t, err)
	defer sq.Close()
	db := do.NewDB(dosql.Host(sq, d.h.Clock().Now))
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'p\_%' ESCAPE '\' ORDER BY name`)
	require.NoError(d.t, err)
	var out []string
	for rows.Next() {
		out = append(out, rows.Text(0))
	}
	return out
}
