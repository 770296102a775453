package dosql_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
)

func open(t *testing.T) *dosql.DB {
	t.Helper()
	db, err := dosql.Open(filepath.Join(t.TempDir(), "t.sqlite"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func q(t *testing.T, db *dosql.DB, sql string, args ...any) *do.Rows {
	t.Helper()
	p, err := do.EncodeParams(nil, args...)
	require.NoError(t, err)
	out, err := db.Query(sql, p)
	require.NoError(t, err, sql)
	rows, err := do.DecodeRows(append([]byte(nil), out...))
	require.NoError(t, err)
	return rows
}

func count(t *testing.T, db *dosql.DB) int64 {
	rows := q(t, db, `SELECT count(*) FROM t`)
	require.True(t, rows.Next())
	return rows.Int(0)
}

func TestNestedTransactionsAreSavepoints(t *testing.T) {
	t.Parallel()
	db := open(t)
	q(t, db, `CREATE TABLE t (a INTEGER)`)
	require.NoError(t, db.Begin())
	q(t, db, `INSERT INTO t VALUES (1)`)
	require.NoError(t, db.Begin())
	q(t, db, `INSERT INTO t VALUES (2)`)
	require.NoError(t, db.Rollback(), "an inner rollback undoes only the inner part")
	require.NoError(t, db.Begin())
	q(t, db, `INSERT INTO t VALUES (3)`)
	require.NoError(t, db.Commit())
	require.NoError(t, db.Commit())
	require.False(t, db.InTx())
	rows := q(t, db, `SELECT a FROM t ORDER BY a`)
	var got []int64
	for rows.Next() {
		got = append(got, rows.Int(0))
	}
	require.Equal(t, []int64{1, 3}, got)
}

func TestRollbackAllUndoesEveryLevel(t *testing.T) {
	t.Parallel()
	db := open(t)
	q(t, db, `CREATE TABLE t (a INTEGER)`)
	require.NoError(t, db.Begin())
	q(t, db, `INSERT INTO t VALUES (1)`)
	require.NoError(t, db.Begin())
	q(t, db, `INSERT INTO t VALUES (2)`)
	require.NoError(t, db.RollbackAll(), "what a host does after a trap")
	require.False(t, db.InTx())
	require.Equal(t, int64(0), count(t, db))
	require.NoError(t, db.RollbackAll(), "with nothing open it is a no-op")
}

func TestGuestCannotControlTransactions(t *testing.T) {
	t.Parallel()
	db := open(t)
	for _, s := range []string{"BEGIN", "COMMIT", "SAVEPOINT x", "RELEASE x", "ROLLBACK"} {
		_, err := db.Query(s, []byte{0})
		require.ErrorContains(t, err, "please use the state.storage.transaction()", s)
	}
}

func TestMultiStatementRunsEachAndReturnsTheLast(t *testing.T) {
	t.Parallel()
	db := open(t)
	rows := q(t, db, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (5); SELECT a FROM t;  \n")
	require.True(t, rows.Next())
	require.Equal(t, int64(5), rows.Int(0))
	_, err := db.Query("SELECT 1; -- note", []byte{0})
	require.ErrorContains(t, err, "SQL code did not contain a statement.")
	p, _ := do.EncodeParams(nil, 1)
	_, err = db.Query("SELECT ?; SELECT 2", p)
	require.ErrorContains(t, err, "only the last statement can have parameters")
}

func TestErrorsInDurableObjectForm(t *testing.T) {
	t.Parallel()
	db := open(t)
	q(t, db, `CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT NOT NULL)`)
	q(t, db, `INSERT INTO t VALUES (1, 'x')`)
	_, err := db.Query(`INSERT INTO t VALUES (1, 'y')`, []byte{0})
	require.EqualError(t, err, "UNIQUE constraint failed: t.a: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_PRIMARYKEY)")
	require.True(t, do.IsConstraint(err))
	_, err = db.Query(`SELEC 1`, []byte{0})
	require.EqualError(t, err, `near "SELEC": syntax error at offset 0: SQLITE_ERROR`)
	_, err = db.Query(`PRAGMA journal_mode`, []byte{0})
	require.EqualError(t, err, "not authorized: SQLITE_AUTH")
	_, err = db.Query(`SELECT 1 /*`+strings.Repeat("x", do.MaxStatementBytes)+`*/`, []byte{0})
	require.EqualError(t, err, "statement too long: SQLITE_TOOBIG")
}

func TestIntegersBeyondJSComeBackAsAJSHostReturnsThem(t *testing.T) {
	t.Parallel()
	db := open(t)
	out, err := db.Query(`SELECT 9007199254740993, -9007199254740993, 9223372036854775807`, []byte{0})
	require.NoError(t, err)
	rows, err := do.DecodeRows(out)
	require.NoError(t, err)
	require.True(t, rows.Next())
	// Rounded to the nearest double, as V8 turns SQLite's int64 into a Number.
	require.Equal(t, do.Value{Kind: do.KindFloat, Float: 9007199254740992}, rows.Value(0))
	require.Equal(t, do.Value{Kind: do.KindFloat, Float: -9007199254740992}, rows.Value(1))
	require.Equal(t, do.Value{Kind: do.KindFloat, Float: 9223372036854775808}, rows.Value(2))
	rows.Int(0)
	require.ErrorContains(t, rows.Err(), "column 0 is real, not integer", "tenant code reading an integer is told, never given a wrong one")
}

func TestStatementCacheSurvivesReuse(t *testing.T) {
	t.Parallel()
	db := open(t)
	q(t, db, `CREATE TABLE t (a INTEGER)`)
	for i := 0; i < 300; i++ { // beyond the cache bound as well
		q(t, db, `INSERT INTO t VALUES (?)`, i)
		q(t, db, `SELECT a FROM t WHERE a = `+strings.Repeat(" ", i%40)+`?`, i)
	}
	require.Equal(t, int64(300), count(t, db))
}

// A database closed for a reopen leaves its short log beside the file,
// and the next open reads every commit through it; a plain close copies
// the log into the file and removes it; a long log is copied even when
// closing for a reopen.
func TestCloseForReopenKeepsAShortLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.sqlite")
	db, err := dosql.Open(path)
	require.NoError(t, err)
	q(t, db, `CREATE TABLE t (a INTEGER, b BLOB)`)
	q(t, db, `INSERT INTO t VALUES (1, zeroblob(100))`)
	require.NoError(t, db.CloseForReopen())
	info, err := os.Stat(path + "-wal")
	require.NoError(t, err, "the log was not kept")
	require.NotZero(t, info.Size())

	db, err = dosql.Open(path)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, db))
	q(t, db, `INSERT INTO t VALUES (2, zeroblob(100))`)
	require.NoError(t, db.Close())
	_, err = os.Stat(path + "-wal")
	require.ErrorIs(t, err, os.ErrNotExist, "a plain close leaves no log")

	db, err = dosql.Open(path)
	require.NoError(t, err)
	require.EqualValues(t, 2, count(t, db))
	for range 40 { // 40 × 40 KB: past the log CloseForReopen keeps
		q(t, db, `INSERT INTO t VALUES (3, zeroblob(40000))`)
	}
	require.NoError(t, db.CloseForReopen())
	_, err = os.Stat(path + "-wal")
	require.ErrorIs(t, err, os.ErrNotExist, "a long log was kept")
	db, err = dosql.Open(path)
	require.NoError(t, err)
	defer db.Close()
	require.EqualValues(t, 42, count(t, db))
}

// Rows counts what SQLite can say: rows returned, and rows changed by any
// statement of a call (the first ones of several too) or a trigger, each
// changed row read as well.
func TestRowsCountEveryStatementOfACall(t *testing.T) {
	t.Parallel()
	db := open(t)
	read, written := db.Rows()
	require.Zero(t, read+written, "a new database")
	q(t, db, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2); INSERT INTO t VALUES (3)")
	read, written = db.Rows()
	require.Equal(t, []int64{3, 3}, []int64{read, written}, "the first INSERT of the call counts")
	q(t, db, `CREATE TABLE n (c INTEGER); INSERT INTO n VALUES (0);
		CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE n SET c = c + 1; END`)
	q(t, db, `INSERT INTO t VALUES (4)`)
	rows := q(t, db, `SELECT a FROM t`)
	n := 0
	for rows.Next() {
		n++
	}
	require.Equal(t, 4, n)
	read, written = db.Rows()
	require.Equal(t, int64(3+1+2), written, "the setup's insert, the row and its trigger's update")
	require.Equal(t, written+4, read, "what changed, and the four rows returned")
}
