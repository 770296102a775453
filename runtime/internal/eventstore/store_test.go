package eventstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/eventstore"
)

func open(t *testing.T) (*do.DB, *eventstore.Store) {
	db := dosqltest.Open(t)
	return db, eventstore.New(db)
}

func drafts(types ...string) []eventstore.Draft {
	out := make([]eventstore.Draft, len(types))
	for i, typ := range types {
		out[i] = eventstore.Draft{Type: typ, Data: []byte(`{"i":` + string(rune('0'+i%10)) + `}`)}
	}
	return out
}

func seqs(es []eventstore.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// The log's seqs have no gaps, across streams, across appends wider than
// one INSERT, and across appends that rolled back; each stream's versions
// count from 1.
func TestSeqsAreGaplessAndVersionsPerStream(t *testing.T) {
	t.Parallel()
	db, s := open(t)
	first, last, version, err := s.Append(10, "a", 0, drafts("x", "y"), "")
	require.NoError(t, err)
	require.Equal(t, [3]int64{1, 2, 2}, [3]int64{first, last, version})

	// Rolled back: its seqs are given out again.
	boom := errors.New("boom")
	require.ErrorIs(t, db.Tx(func() error {
		if _, _, _, err := s.Append(11, "b", eventstore.Any, drafts("x", "x", "x"), ""); err != nil {
			return err
		}
		return boom
	}), boom)

	many := make([]string, 40) // wider than one INSERT
	for i := range many {
		many[i] = "m"
	}
	first, last, version, err = s.Append(12, "b", 0, drafts(many...), "cmd-1")
	require.NoError(t, err)
	require.Equal(t, [3]int64{3, 42, 40}, [3]int64{first, last, version})
	head, err := s.Head()
	require.NoError(t, err)
	require.Equal(t, int64(42), head)

	all, _, err := s.Read(0, nil, 100, 0)
	require.NoError(t, err)
	require.Len(t, all, 42)
	for i, e := range all {
		require.Equal(t, int64(i+1), e.Seq, "no gap in the log")
	}
	b, _, err := s.ReadStream("b", 1, 100, 0)
	require.NoError(t, err)
	require.Len(t, b, 40)
	for i, e := range b {
		require.Equal(t, int64(i+1), e.Version)
		require.Equal(t, "cmd-1", e.CommandID)
		require.Equal(t, int64(12), e.At)
	}
	tail, _, err := s.ReadStream("b", 39, 100, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{41, 42}, seqs(tail))
}

// An append at the wrong expected version is a version_conflict naming the
// current version, and writes nothing.
func TestAppendAtTheWrongVersionConflicts(t *testing.T) {
	t.Parallel()
	_, s := open(t)
	_, _, _, err := s.Append(1, "order:1", 0, drafts("placed"), "")
	require.NoError(t, err)

	for _, tc := range []struct {
		expected int64
		msg      string
	}{
		{0, "stream order:1 already exists (version 1): expected a new stream"},
		{2, "stream order:1 is at version 1, not the expected 2: read it and decide again"},
	} {
		_, _, version, err := s.Append(2, "order:1", tc.expected, drafts("paid"), "")
		var c *api.Error
		require.ErrorAs(t, err, &c)
		one := int64(1)
		require.Equal(t, api.Error{Status: 409, Code: api.CodeVersionConflict, Message: tc.msg, Stream: "order:1", CurrentVersion: &one}, *c)
		require.Equal(t, int64(1), version)
	}
	v, err := s.Version("order:1")
	require.NoError(t, err)
	require.Equal(t, int64(1), v, "a conflict appends nothing")

	_, _, version, err := s.Append(3, "order:1", 1, drafts("paid"), "")
	require.NoError(t, err)
	require.Equal(t, int64(2), version)
	_, _, version, err = s.Append(4, "order:1", eventstore.Any, drafts("shipped"), "")
	require.NoError(t, err)
	require.Equal(t, int64(3), version)
}

// Reading by types merges one range per type in log order, cut at the
// limit, and counts are bounded by their max.
func TestReadByTypes(t *testing.T) {
	t.Parallel()
	_, s := open(t)
	for _, typ := range []string{"a", "b", "c", "a", "c", "b", "a"} {
		_, _, _, err := s.Append(1, "s", eventstore.Any, drafts(typ), "")
		require.NoError(t, err)
	}
	got, _, err := s.Read(0, []string{"a", "b"}, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 4, 6, 7}, seqs(got))
	got, _, err = s.Read(2, []string{"a", "b"}, 2, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{4, 6}, seqs(got))
	got, _, err = s.Read(0, []string{"nope"}, 10, 0)
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = s.ReadSeqs([]int64{7, 1, 5})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 5, 7}, seqs(got))

	n, err := s.CountAfter(1, []string{"a", "c"}, 100)
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	n, err = s.CountAfter(0, []string{"a", "c"}, 2)
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "up to max")
}

// Appended tells whether events were appended since it was last asked;
// Rollback forgets the appends of a savepoint that rolled back.
func TestAppendedFollowsSavepoints(t *testing.T) {
	t.Parallel()
	_, s := open(t)
	require.False(t, s.Appended())
	sp := s.Savepoint()
	_, _, _, err := s.Append(1, "s", eventstore.Any, drafts("a"), "")
	require.NoError(t, err)
	s.Rollback(sp)
	require.False(t, s.Appended(), "the savepoint's append rolled back")

	_, _, _, err = s.Append(1, "s", eventstore.Any, drafts("a"), "")
	require.NoError(t, err)
	sp = s.Savepoint()
	s.Rollback(sp)
	require.True(t, s.Appended(), "an append before the savepoint stays")
	require.False(t, s.Appended(), "and is reported once")
}

// The command ledger keeps each id once; a digest tells a repeat of a
// command from another command reusing its id.
func TestCommandLedger(t *testing.T) {
	t.Parallel()
	_, s := open(t)
	_, found, err := s.Command("c1")
	require.NoError(t, err)
	require.False(t, found)

	rec := eventstore.CommandRecord{ID: "c1", Aggregate: "order", AggregateID: "1", Type: "Place",
		Digest: eventstore.Digest("order", "1", "Place", []byte(`{"n":1}`)), FirstSeq: 3, LastSeq: 4, Version: 2,
		JobIDs: []byte(`["j1"]`), Source: "http", At: 99}
	require.NoError(t, s.RecordCommand(rec))
	got, found, err := s.Command("c1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, rec, got)
	require.Error(t, s.RecordCommand(rec), "an id is recorded once")

	none := eventstore.CommandRecord{ID: "c2", Aggregate: "order", AggregateID: "1", Type: "Noop", Digest: "d", JobIDs: []byte(`[]`), Source: "http"}
	require.NoError(t, s.RecordCommand(none))
	got, _, err = s.Command("c2")
	require.NoError(t, err)
	require.Equal(t, int64(0), got.FirstSeq, "a command that appended nothing")
	require.Equal(t, int64(0), got.LastSeq)

	d := eventstore.Digest("order", "1", "Place", []byte(`{"n":1}`))
	require.Equal(t, d, eventstore.Digest("order", "1", "Place", []byte(`{"n":1}`)))
	require.Equal(t, eventstore.Digest("o", "1", "P", nil), eventstore.Digest("o", "1", "P", []byte("null")), "null data is no data")
	for _, other := range []string{
		eventstore.Digest("order", "1", "Place", []byte(`{"n":2}`)),
		eventstore.Digest("order", "2", "Place", []byte(`{"n":1}`)),
		eventstore.Digest("orde", "r1", "Place", []byte(`{"n":1}`)), // the boundaries count
		eventstore.Digest("order", "1", "Cancel", []byte(`{"n":1}`)),
	} {
		require.NotEqual(t, d, other)
	}
}

// A budget stops a page where its events' data would pass it, and says
// so; the next page goes on from there.
func TestAPageStopsAtItsByteBudget(t *testing.T) {
	db := dosqltest.Open(t)
	s := eventstore.New(db)
	big := []byte(`"` + strings.Repeat("x", 1000) + `"`)
	require.NoError(t, db.Tx(func() error {
		for range 5 {
			if _, _, _, err := s.Append(0, "big", eventstore.Any, []eventstore.Draft{{Type: "a", Data: big}}, ""); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, read := range []func(budget int64) ([]eventstore.Event, bool, error){
		func(b int64) ([]eventstore.Event, bool, error) { return s.Read(0, nil, 100, b) },
		func(b int64) ([]eventstore.Event, bool, error) { return s.Read(0, []string{"a"}, 100, b) },
		func(b int64) ([]eventstore.Event, bool, error) { return s.ReadStream("big", 1, 100, b) },
	} {
		evs, cut, err := read(2500)
		require.NoError(t, err)
		require.True(t, cut)
		require.Len(t, evs, 2, "two events of about 1 KB fit 2,500 bytes")
		evs, cut, err = read(100)
		require.NoError(t, err)
		require.True(t, cut)
		require.Len(t, evs, 1, "one event goes whatever its size")
		evs, cut, err = read(0)
		require.NoError(t, err)
		require.False(t, cut)
		require.Len(t, evs, 5)
	}
}
