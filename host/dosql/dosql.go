package dosql

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/stile-run/stile/do"
)

// DB is one tenant's database. It is not safe for concurrent use.
type DB struct {
	path    string
	conn    *sqlite3.Conn
	stmts   map[string]*sqlite3.Stmt // tenant statements, prepared
	own     map[string]*sqlite3.Stmt // the host's transaction statements
	depth   int                      // open transaction levels
	commits int64                    // outermost transactions committed
	rows    do.RowSetWriter
	out     []byte

	// returned counts the rows the tenant's statements returned, and
	// changes0 is the connection's count of changed rows when it opened
	// (Rows).
	returned, changes0 int64

	// walked is the schema's and statements' memory, as MemoryBytes last
	// counted it, sinceCount calls ago.
	walked     int64
	sinceCount int

	host   bool   // the host's own statement: the authorizer lets it through
	denied string // why the authorizer refused the statement being prepared
}

// limits are workerd's SQLite limits, measured (e2e/dosqlite).
var limits = []struct {
	id    sqlite3.LimitCategory
	value int
}{
	{sqlite3.LIMIT_VARIABLE_NUMBER, do.MaxBoundParams},
	{sqlite3.LIMIT_SQL_LENGTH, do.MaxStatementBytes},
	{sqlite3.LIMIT_LENGTH, MaxLength},
	{sqlite3.LIMIT_EXPR_DEPTH, 100},
	{sqlite3.LIMIT_COMPOUND_SELECT, 5},
	{sqlite3.LIMIT_LIKE_PATTERN_LENGTH, 50},
	{sqlite3.LIMIT_FUNCTION_ARG, 127},
	{sqlite3.LIMIT_TRIGGER_DEPTH, 10},
}

// MaxLength is the largest string, blob or row workerd's SQLite accepts
// (measured: 2,200,000 bytes). Tenant code is held to the documented 2 MB
// by the value codec (do.MaxValueBytes) before a value reaches any host.
const MaxLength = 2_200_000

// maxCachedStatements bounds the prepared-statement cache.
const maxCachedStatements = 256

// Sync is SQLite's synchronous setting for a tenant's database, in WAL
// mode: SyncNormal syncs the log at each checkpoint, not at each commit
// (a power loss or an OS crash may lose the last commits, never the
// database's consistency; a crash of the process loses nothing);
// SyncFull syncs the log at each commit (nothing committed is lost),
// which costs a sync per write request.
type Sync string

const (
	SyncNormal Sync = "NORMAL" // the default
	SyncFull   Sync = "FULL"
)

// ParseSync reads a Sync from "normal" or "full".
func ParseSync(s string) (Sync, error) {
	switch strings.ToUpper(s) {
	case string(SyncNormal):
		return SyncNormal, nil
	case string(SyncFull):
		return SyncFull, nil
	}
	return "", fmt.Errorf("%q: use normal or full", s)
}

// Open opens (creating if needed) the database at path with SyncNormal;
// ":memory:" works for tests.
func Open(path string) (*DB, error) { return OpenSync(path, SyncNormal) }

// OpenSync opens the database at path as Open does, with the given
// synchronous setting ("" is SyncNormal).
func OpenSync(path string, sync Sync) (*DB, error) {
	if sync == "" {
		sync = SyncNormal
	}
	if _, err := ParseSync(string(sync)); err != nil {
		return nil, fmt.Errorf("open %s: synchronous %w", path, err)
	}
	conn, err := sqlite3.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := &DB{path: path, conn: conn, stmts: map[string]*sqlite3.Stmt{}, own: map[string]*sqlite3.Stmt{}, changes0: conn.TotalChanges()}
	setup := []string{
		// Durable Object storage is durable at commit; WAL with NORMAL is
		// durable except against power loss or an OS crash, which a dev
		// server accepts by default (stile dev --sync full does not).
		`PRAGMA journal_mode = WAL`,
		`PRAGMA synchronous = ` + string(sync),
		`PRAGMA foreign_keys = ON`, // on by default in Durable Objects
		`PRAGMA busy_timeout = 5000`,
		// workerd keeps its key-value storage here; tenant SQL may not
		// touch it, and gets the same refusals for trying.
		`CREATE TABLE IF NOT EXISTS _cf_KV (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID`,
	}
	db.host = true
	for _, s := range setup {
		if err := conn.Exec(s); err != nil {
			conn.Close()
			return nil, fmt.Errorf("open %s: %s: %w", path, s, err)
		}
	}
	db.host = false
	for _, l := range limits {
		conn.Limit(l.id, l.value)
	}
	if err := fts5.Register(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open %s: register fts5: %w", path, err)
	}
	// workerd has load_extension but refuses to run it.
	if err := conn.CreateFunction("load_extension", -1, 0, func(ctx sqlite3.Context, _ ...sqlite3.Value) {
		ctx.ResultError(errors.New("not authorized"))
	}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := conn.SetAuthorizer(db.authorize); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open %s: set authorizer: %w", path, err)
	}
	return db, nil
}

// keptLogBytes bounds the write-ahead log CloseForReopen leaves: the next
// open reads all of it (SQLite rebuilds the log's index from it).
const keptLogBytes = 1 << 20

// CloseForReopen closes the database as Close does, except that a
// write-ahead log of up to keptLogBytes is left beside the file for the
// next open instead of being copied into it: SQLite's checkpoint at close
// costs two syncs and the page writes, and the next open's first commit
// then starts a new log, whose header it syncs. A longer log is
// checkpointed as Close does. The log is SQLite's own: its shell and any
// later open read the database with it.
func (db *DB) CloseForReopen() error {
	if info, err := os.Stat(db.path + "-wal"); err == nil && info.Size() <= keptLogBytes {
		if _, err := db.conn.Config(sqlite3.DBCONFIG_NO_CKPT_ON_CLOSE, true); err != nil {
			return errors.Join(fmt.Errorf("close %s: keep the log: %w", db.path, err), db.Close())
		}
	}
	return db.Close()
}

// Scrub rewrites the database at path, which no connection has open,
// so that nothing deleted from it stays on its files: VACUUM rebuilds it
// without free pages (secure_delete zeroes what it frees meanwhile), the
// checkpoint copies the write-ahead log into it and empties the log, and
// the log and its index are removed. An erased tenant's file is scrubbed
// after its erasure commits.
func Scrub(path string) error {
	conn, err := sqlite3.Open(path)
	if err != nil {
		return fmt.Errorf("scrub %s: %w", path, err)
	}
	for _, s := range []string{
		`PRAGMA busy_timeout = 5000`,
		`PRAGMA secure_delete = ON`,
		`PRAGMA temp_store = MEMORY`, // VACUUM's copy stays off the disk
		`VACUUM`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if err := conn.Exec(s); err != nil {
			conn.Close()
			return fmt.Errorf("scrub %s: %s: %w", path, s, err)
		}
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("scrub %s: %w", path, err)
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("scrub %s: %w", path, err)
		}
	}
	return nil
}

// Close closes the database, rolling back any open transaction.
func (db *DB) Close() error {
	for _, s := range db.stmts {
		s.Close()
	}
	for _, s := range db.own {
		s.Close()
	}
	db.stmts, db.own = nil, nil
	return db.conn.Close()
}

// Replanned is how many times SQLite prepared one of the kept statements
// again before a run (a statement whose plan depends on a bound value is
// planned anew at each bind): a statement kept for reuse should not be.
func (db *DB) Replanned() int {
	n := 0
	for _, s := range db.stmts {
		n += s.Status(sqlite3.STMTSTATUS_REPREPARE, false)
	}
	return n
}

// InTx reports whether a transaction is open.
func (db *DB) InTx() bool { return db.depth > 0 }

// Begin opens a transaction, or a savepoint inside the open one.
func (db *DB) Begin() error {
	var err error
	if db.depth == 0 {
		err = db.hostExec(`BEGIN IMMEDIATE`)
	} else {
		err = db.hostExec(`SAVEPOINT s` + strconv.Itoa(db.depth))
	}
	if err != nil {
		return fmt.Errorf("begin transaction level %d: %w", db.depth+1, err)
	}
	db.depth++
	return nil
}

// Commit commits the innermost transaction level.
func (db *DB) Commit() error {
	if db.depth == 0 {
		return errors.New("commit: no transaction is open")
	}
	var err error
	if db.depth == 1 {
		err = db.hostExec(`COMMIT`)
	} else {
		err = db.hostExec(`RELEASE s` + strconv.Itoa(db.depth-1))
	}
	if err != nil {
		return fmt.Errorf("commit transaction level %d: %w", db.depth, err)
	}
	if db.depth == 1 {
		db.commits++
	}
	db.depth--
	return nil
}

// Commits counts the transactions committed (outermost levels only): a
// host compares it before and after a call to tell whether the call wrote
// anything that stands.
func (db *DB) Commits() int64 { return db.commits }

// Rollback rolls back the innermost transaction level.
func (db *DB) Rollback() error {
	if db.depth == 0 {
		return errors.New("rollback: no transaction is open")
	}
	var err error
	if db.depth == 1 {
		err = db.hostExec(`ROLLBACK`)
	} else {
		sp := `s` + strconv.Itoa(db.depth-1)
		if err = db.hostExec(`ROLLBACK TO ` + sp); err == nil {
			err = db.hostExec(`RELEASE ` + sp)
		}
	}
	db.depth--
	if err != nil {
		return fmt.Errorf("roll back transaction level %d: %w", db.depth+1, err)
	}
	return nil
}

// RollbackAll rolls back every open level: what a host does when the guest
// trapped in the middle of a transaction.
func (db *DB) RollbackAll() error {
	if db.depth == 0 {
		return nil
	}
	db.depth = 0
	if db.conn.GetAutocommit() {
		return nil
	}
	return db.hostExec(`ROLLBACK`)
}

// hostExec runs one of the host's own statements (transaction control),
// prepared once and kept: they run twice per request.
func (db *DB) hostExec(sql string) error {
	db.host = true
	defer func() { db.host = false }()
	stmt, ok := db.own[sql]
	if !ok {
		var tail string
		var err error
		stmt, tail, err = db.conn.Prepare(sql)
		if err != nil {
			return err
		}
		if strings.TrimSpace(tail) != "" { // a compound statement: run it whole
			stmt.Close()
			return db.conn.Exec(sql)
		}
		db.own[sql] = stmt
	}
	return stmt.Exec()
}

// statements counts the calls of Query, in every DB of the process.
var statements atomic.Int64

// Statements is how many SQL calls the process's tenant databases have
// answered (the benchmarks' statements per job).
func Statements() int64 { return statements.Load() }

// Query runs tenant SQL with an encoded parameter list and returns an
// encoded row set. Like Durable Object storage it accepts several
// statements in one call (only the last may have parameters) and returns
// the rows of the last. Errors are *do.SQLError in Durable Object form.
func (db *DB) Query(sql string, params []byte) ([]byte, error) {
	statements.Add(1)
	args, err := do.DecodeParams(params)
	if err != nil {
		return nil, &do.SQLError{Msg: err.Error()}
	}
	if len(sql) > do.MaxStatementBytes {
		// SQLite's own limit check, with workerd's wording.
		return nil, &do.SQLError{Msg: msgStatementTooLong}
	}
	stmt, cached, err := db.prepareFirst(sql)
	if err != nil {
		return nil, err
	}
	if !cached {
		defer stmt.Close()
	}
	if err := db.bind(stmt, args); err != nil {
		stmt.Reset()
		return nil, err
	}
	n := stmt.ColumnCount()
	db.rows.Reset(n)
	for stmt.Step() {
		db.returned++
		for i := 0; i < n; i++ {
			if err := db.appendColumn(stmt, i); err != nil {
				stmt.Reset()
				return nil, &do.SQLError{Msg: err.Error()}
			}
		}
		db.rows.EndRow()
	}
	if err := stmt.Err(); err != nil {
		stmt.Reset()
		return nil, db.sqlError(err, "")
	}
	stmt.Reset()
	db.out = db.rows.AppendTo(db.out[:0])
	return db.out, nil
}

// Rows is how many rows the tenant's statements read and wrote since the
// database opened, as SQLite can say: rows returned and rows changed (a
// changed row counts as read too; rows changed by triggers, and by every
// statement of a call of several, count). It is a lower bound of what
// Durable Object storage bills, which counts every row a statement scans
// and every index entry it writes.
func (db *DB) Rows() (read, written int64) {
	written = db.conn.TotalChanges() - db.changes0
	return db.returned + written, written
}

// prepareFirst runs every statement of sql but the last (multi-statement
// calls, as migrations make) and returns the last one prepared. Like
// workerd, trailing whitespace ends the text but anything else after a ';'
// (even a lone comment) must be a statement. A single statement comes from
// the cache.
func (db *DB) prepareFirst(sql string) (*sqlite3.Stmt, bool, error) {
	if s, ok := db.stmts[sql]; ok {
		return s, true, nil
	}
	if renamesToReserved(sql) {
		return nil, false, &do.SQLError{Msg: "not authorized: SQLITE_AUTH"}
	}
	rest := sql
	for {
		db.denied = ""
		stmt, tail, err := db.conn.Prepare(rest)
		if err != nil {
			return nil, false, db.sqlError(err, rest)
		}
		if stmt == nil {
			return nil, false, &do.SQLError{Msg: msgNoStatement}
		}
		if strings.TrimSpace(tail) == "" {
			if rest == sql && len(db.stmts) < maxCachedStatements {
				db.stmts[strings.Clone(sql)] = stmt // sql may be a view of guest memory
				return stmt, true, nil
			}
			return stmt, false, nil
		}
		if stmt.BindCount() > 0 {
			stmt.Close()
			return nil, false, &do.SQLError{Msg: msgMultiParams}
		}
		err = stmt.Exec()
		stmt.Close()
		if err != nil {
			return nil, false, db.sqlError(err, "")
		}
		rest = tail
	}
}

func (db *DB) bind(stmt *sqlite3.Stmt, args []do.Value) error {
	if want := stmt.BindCount(); len(args) != want {
		return &do.SQLError{Msg: msgBindings}
	}
	for i, v := range args {
		var err error
		switch v.Kind {
		case do.KindNull:
			err = stmt.BindNull(i + 1)
		case do.KindInt:
			err = stmt.BindInt64(i+1, v.Int)
		case do.KindFloat:
			err = stmt.BindFloat(i+1, v.Float)
		case do.KindText:
			err = stmt.BindRawText(i+1, v.Bytes)
		case do.KindBlob:
			err = stmt.BindBlob(i+1, v.Bytes)
		}
		if err != nil {
			return db.sqlError(err, "")
		}
	}
	return nil
}

func (db *DB) appendColumn(stmt *sqlite3.Stmt, i int) error {
	switch stmt.ColumnType(i) {
	case sqlite3.INTEGER:
		n := stmt.ColumnInt64(i)
		if n > do.MaxSafeInteger || n < do.MinSafeInteger {
			// A Durable Object returns it as a JS number, rounded; so the
			// guest gets the same real (which Rows.Int refuses) in every
			// host. Keep it in range, or carry it as text.
			return db.rows.AppendValue(do.Value{Kind: do.KindFloat, Float: float64(n)})
		}
		return db.rows.AppendValue(do.Value{Kind: do.KindInt, Int: n})
	case sqlite3.FLOAT:
		return db.rows.AppendValue(do.Value{Kind: do.KindFloat, Float: stmt.ColumnFloat(i)})
	case sqlite3.TEXT:
		return db.rows.AppendValue(do.Value{Kind: do.KindText, Bytes: stmt.ColumnRawText(i)})
	case sqlite3.BLOB:
		b := stmt.ColumnRawBlob(i)
		if b == nil {
			b = []byte{}
		}
		return db.rows.AppendValue(do.Value{Kind: do.KindBlob, Bytes: b})
	}
	return db.rows.AppendValue(do.Value{Kind: do.KindNull})
}

// Host is a do.Host over db, with the clock now: what the stores need to
// run without a tenant module, in tools and tests.
func Host(db *DB, now func() int64) do.Host { return dbHost{db: db, now: now} }

type dbHost struct {
	db  *DB
	now func() int64
}

func (h dbHost) Query(sql string, params []byte) ([]byte, error) { return h.db.Query(sql, params) }
func (h dbHost) Now() int64                                      { return h.now() }
func (h dbHost) Log(do.Level, string)                            {}

// Tx implements do.Host: nested calls are savepoints.
func (h dbHost) Tx(body func() error) error {
	if err := h.db.Begin(); err != nil {
		return err
	}
	if err := body(); err != nil {
		return errors.Join(err, h.db.Rollback())
	}
	if err := h.db.Commit(); err != nil {
		return errors.Join(do.ErrTxFailed, err, h.db.Rollback())
	}
	return nil
}

// MemoryBytes is what the connection's SQLite says it holds: its page
// cache, schema and prepared statements (sqlite3_db_status). SQLite
// counts the schema's and the statements' by walking them (about 50 µs
// for a tenant's schema), so those two are counted again only every
// recountEvery calls; they change with migrations and the statement
// cache, not from one request to the next.
func (db *DB) MemoryBytes() int64 {
	if db.sinceCount == 0 {
		db.walked = 0
		for _, op := range []sqlite3.DBStatus{sqlite3.DBSTATUS_SCHEMA_USED, sqlite3.DBSTATUS_STMT_USED} {
			if cur, _, err := db.conn.Status(op, false); err == nil {
				db.walked += cur
			}
		}
	}
	db.sinceCount = (db.sinceCount + 1) % recountEvery
	n := db.walked
	if cur, _, err := db.conn.Status(sqlite3.DBSTATUS_CACHE_USED, false); err == nil {
		n += cur
	}
	return n
}

// recountEvery is how often MemoryBytes walks the schema and statements.
const recountEvery = 64
