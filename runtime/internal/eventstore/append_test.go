package eventstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/eventstore"
)

// An append commits only at the version it expects (or Any), numbering its
// events after the log's last seq and the stream's last version; at any
// other version it is a version_conflict saying where the stream is, and
// writes nothing.
func TestAppendExpectsAVersion(t *testing.T) {
	t.Parallel()
	const events = `SELECT seq, stream, version, type, data, command_id, at, traceparent FROM stile_events ORDER BY seq`
	for _, tc := range []struct {
		name     string
		stream   string
		expected int64
		drafts   []eventstore.Draft
		command  string
		trace    string
		current  int64 // the stream's version the conflict names (-1: no conflict)
		rows     [][]any
	}{
		{name: "a new stream, expected new", stream: "order:2", expected: 0, current: -1,
			drafts: []eventstore.Draft{{Type: "placed", Data: []byte(`{"n":1}`)}, {Type: "paid"}}, command: "c1", trace: "00-t-s-01",
			rows: [][]any{{int64(4), "order:2", int64(1), "placed", `{"n":1}`, "c1", int64(50), "00-t-s-01"},
				{int64(5), "order:2", int64(2), "paid", "null", "c1", int64(50), "00-t-s-01"}}},
		{name: "an existing stream at its version", stream: "order:1", expected: 2, current: -1,
			drafts: []eventstore.Draft{{Type: "shipped"}},
			rows:   [][]any{{int64(4), "order:1", int64(3), "shipped", "null", nil, int64(50), nil}}},
		{name: "an existing stream at any version", stream: "order:1", expected: eventstore.Any, current: -1,
			drafts: []eventstore.Draft{{Type: "shipped"}},
			rows:   [][]any{{int64(4), "order:1", int64(3), "shipped", "null", nil, int64(50), nil}}},
		{name: "a new stream at any version", stream: "order:3", expected: eventstore.Any, current: -1,
			drafts: []eventstore.Draft{{Type: "placed"}},
			rows:   [][]any{{int64(4), "order:3", int64(1), "placed", "null", nil, int64(50), nil}}},
		{name: "an existing stream, expected new", stream: "order:1", expected: 0, current: 2,
			drafts: []eventstore.Draft{{Type: "placed"}}},
		{name: "an existing stream behind the version expected", stream: "order:1", expected: 3, current: 2,
			drafts: []eventstore.Draft{{Type: "paid"}}},
		{name: "an existing stream past the version expected", stream: "order:1", expected: 1, current: 2,
			drafts: []eventstore.Draft{{Type: "paid"}}},
		{name: "a new stream, expected to exist", stream: "order:9", expected: 1, current: 0,
			drafts: []eventstore.Draft{{Type: "paid"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, s := open(t)
			// The log: order:1 at version 2, and another stream's event.
			_, _, _, err := s.Append(10, "order:1", 0, drafts("placed", "paid"), "")
			require.NoError(t, err)
			_, _, _, err = s.Append(20, "other", 0, drafts("x"), "")
			require.NoError(t, err)
			s.Appended()
			before := dosqltest.Rows(t, db, events)

			s.Traceparent = tc.trace
			var first, last, version int64
			err = db.Tx(func() (err error) {
				first, last, version, err = s.Append(50, tc.stream, tc.expected, tc.drafts, tc.command)
				return
			})

			if tc.current >= 0 {
				var c *api.Error
				require.ErrorAs(t, err, &c)
				require.Equal(t, api.CodeVersionConflict, c.Code)
				require.Equal(t, tc.stream, c.Stream)
				require.Equal(t, tc.current, *c.CurrentVersion)
				require.Equal(t, tc.current, version)
				require.Equal(t, before, dosqltest.Rows(t, db, events), "a conflict writes nothing")
				require.False(t, s.Appended())
				return
			}
			require.NoError(t, err)
			require.Equal(t, append(before, tc.rows...), dosqltest.Rows(t, db, events))
			require.Equal(t, [3]int64{4, 3 + int64(len(tc.drafts)), tc.rows[len(tc.rows)-1][2].(int64)}, [3]int64{first, last, version})
			require.True(t, s.Appended())
			head, err := s.Head()
			require.NoError(t, err)
			require.Equal(t, last, head)
			v, err := s.Version(tc.stream)
			require.NoError(t, err)
			require.Equal(t, version, v)
		})
	}
}
