package do

import (
	"errors"
	"strconv"
	"strings"
)

// Host is what tenant code runs on: one Durable Object's storage and clock.
//
// Inside a wasip1 module it is the Host do.Serve gives the handler, a thin
// layer over the host ABI (guest.go).
// The in-process native host (host/native) implements it directly over
// SQLite, so the same tenant code runs without Wasm in fast tests.
type Host interface {
	// Query runs one SQL statement. params is an encoded parameter list
	// (EncodeParams); the result is an encoded row set (DecodeRows).
	// Failures are *SQLError.
	Query(sql string, params []byte) ([]byte, error)

	// Tx runs body inside a storage transaction; a Tx inside a Tx is a
	// savepoint. When body returns an error, everything written since Tx
	// began is rolled back and Tx returns that error. A panic in body is
	// not recovered: it traps the module, and the host rolls back.
	Tx(body func() error) error

	// Now is the host's clock in Unix milliseconds.
	Now() int64

	// Log writes one line to the host's log.
	Log(level Level, msg string)
}

// SQLError is a statement the database refused, with the database's message
// in Durable Object form ("<message>: SQLITE_<CODE>").
type SQLError struct {
	Msg string
}

func (e *SQLError) Error() string { return e.Msg }

// IsConstraint reports whether err is a constraint violation (UNIQUE, CHECK,
// NOT NULL, FOREIGN KEY).
func IsConstraint(err error) bool {
	var se *SQLError
	return errors.As(err, &se) && strings.Contains(se.Msg, "SQLITE_CONSTRAINT")
}

// DB is the convenient face of a Host for tenant code.
type DB struct {
	host   Host
	params []byte
	rows   Rows
}

// Limit is " LIMIT n", with n written into the statement's text. SQLite
// reads a bound LIMIT's value to plan the statement, so it plans it again
// each time the parameter is bound: a prepare per run, where a statement
// with its limit in the text is prepared once and kept.
func Limit(n int) string { return " LIMIT " + strconv.Itoa(n) }

// NewDB wraps h.
func NewDB(h Host) *DB { return &DB{host: h} }

// Host returns the host under db.
func (db *DB) Host() Host { return db.host }

// Query runs a statement that returns rows. The rows, and the bytes their
// TextBytes returns, are valid until the next query on db: read them, or
// copy what you keep, before the next one.
func (db *DB) Query(sql string, args ...any) (*Rows, error) {
	var err error
	db.params, err = EncodeParams(db.params[:0], args...)
	if err != nil {
		return nil, err
	}
	out, err := db.host.Query(sql, db.params)
	if err != nil {
		return nil, err
	}
	if err := db.rows.reset(out); err != nil {
		return nil, err
	}
	return &db.rows, nil
}

// Exec runs a statement and discards its rows.
func (db *DB) Exec(sql string, args ...any) error {
	_, err := db.Query(sql, args...)
	return err
}

// TextSet runs a statement and returns the set of its rows' first column,
// as text (the paused queues, the paused reactions).
func (db *DB) TextSet(sql string, args ...any) (map[string]bool, error) {
	rows, err := db.Query(sql, args...)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, rows.Len())
	for rows.Next() {
		set[rows.Text(0)] = true
	}
	return set, rows.Err()
}

// Tx runs fn in a transaction (see Host.Tx).
func (db *DB) Tx(fn func() error) error { return db.host.Tx(fn) }

// Now is the host's clock in Unix milliseconds.
func (db *DB) Now() int64 { return db.host.Now() }

// Log writes a log line.
func (db *DB) Log(level Level, msg string) { db.host.Log(level, msg) }
