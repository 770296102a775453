package eventstore

import (
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/budget"
)

// Event is a stored event.
type Event struct {
	Seq       int64
	Stream    string
	Version   int64
	Type      string
	Data      []byte // JSON
	CommandID string
	At        int64
	// Traceparent is the appending request's ("": none).
	Traceparent string
}

// Draft is an event to append.
type Draft struct {
	Type string
	Data []byte // JSON; empty stores null
}

// Any is the expected version of an append that takes the stream as it is.
const Any = -1

// versionConflict refuses an append to a stream that is not at the
// expected version, saying where it is.
func versionConflict(stream string, expected, current int64) *api.Error {
	e := api.Refuse(api.CodeVersionConflict, "stream %s is at version %d, not the expected %d: read it and decide again", stream, current, expected)
	if expected == 0 {
		e.Message = printf.Sprintf("stream %s already exists (version %d): expected a new stream", stream, current)
	}
	e.Stream, e.CurrentVersion = stream, &current
	return e
}

// Store reads and writes the log and the ledger of one tenant.
type Store struct {
	db       *do.DB
	tenantID string
	appended bool
	// Traceparent is the current request's traceparent, stored with the
	// events it appends (the runtime sets it per request).
	Traceparent string
}

// Appended reports, and forgets, whether events were appended since the
// last call (projections have work).
func (s *Store) Appended() bool {
	a := s.appended
	s.appended = false
	return a
}

// Savepoint returns what Rollback needs to forget the appends of a nested
// transaction that rolls back.
func (s *Store) Savepoint() bool { return s.appended }

// Rollback forgets the appends made since Savepoint returned sp: they
// were rolled back.
func (s *Store) Rollback(sp bool) { s.appended = sp }

// New returns a store over db.
func New(db *do.DB) *Store { return &Store{db: db} }

// TenantID is the tenant storage's random identity (see inbox.Key).
func (s *Store) TenantID() (string, error) {
	if s.tenantID != "" {
		return s.tenantID, nil
	}
	rows, err := s.db.Query(`SELECT id FROM stile_identity`)
	if err != nil {
		return "", printf.Errorf("read the tenant identity: %w", err)
	}
	if !rows.Next() {
		return "", printf.Errorf("read the tenant identity: %w", do.ErrNoRow)
	}
	s.tenantID = rows.Text(0)
	return s.tenantID, rows.Err()
}

// Version is a stream's current version (0: no such stream).
func (s *Store) Version(stream string) (int64, error) {
	rows, err := s.db.Query(`SELECT COALESCE(MAX(version), 0) FROM stile_events WHERE stream = ?`, stream)
	if err != nil {
		return 0, printf.Errorf("read the version of stream %s: %w", stream, err)
	}
	rows.Next()
	return rows.Int(0), rows.Err()
}

// Head is the log's last seq (0: empty).
func (s *Store) Head() (int64, error) {
	rows, err := s.db.Query(`SELECT COALESCE(MAX(seq), 0) FROM stile_events`)
	if err != nil {
		return 0, printf.Errorf("read the head of the log: %w", err)
	}
	rows.Next()
	return rows.Int(0), rows.Err()
}

// appendRows is how many events one INSERT carries (7 parameters each,
// under Durable Objects' 100).
const appendRows = 14

// Append appends drafts to stream if it is at version expected (Any: at
// whatever version it is), and returns the seqs of the first and last
// event and the stream's new version. commandID, if set, is recorded on
// each event.
func (s *Store) Append(now int64, stream string, expected int64, drafts []Draft, commandID string) (first, last, version int64, err error) {
	version, err = s.Version(stream)
	if err != nil {
		return 0, 0, 0, err
	}
	if expected != Any && expected != version {
		return 0, 0, version, versionConflict(stream, expected, version)
	}
	var cmd any
	if commandID != "" {
		cmd = commandID
	}
	for start := 0; start < len(drafts); start += appendRows {
		chunk := drafts[start:min(start+appendRows, len(drafts))]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO stile_events (stream, version, type, data, command_id, at, traceparent) VALUES `)
		args := make([]any, 0, 7*len(chunk))
		var tp any
		if s.Traceparent != "" {
			tp = s.Traceparent
		}
		for i, d := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			data := d.Data
			if len(data) == 0 {
				data = []byte("null")
			}
			version++
			args = append(args, stream, version, d.Type, string(data), cmd, now, tp)
		}
		sql.WriteString(` RETURNING seq`)
		rows, err := s.db.Query(sql.String(), args...)
		if err != nil {
			return 0, 0, 0, printf.Errorf("append to stream %s: %w", stream, err)
		}
		for rows.Next() {
			if first == 0 {
				first = rows.Int(0)
			}
			last = rows.Int(0)
		}
		if err := rows.Err(); err != nil {
			return 0, 0, 0, err
		}
	}
	s.appended = s.appended || first > 0
	return first, last, version, nil
}

const eventColumns = `seq, stream, version, type, data, command_id, at, traceparent`

func scan(rows *do.Rows) Event {
	return Event{Seq: rows.Int(0), Stream: rows.Text(1), Version: rows.Int(2), Type: rows.Text(3),
		Data: rows.Bytes(4), CommandID: rows.Text(5), At: rows.Int(6), Traceparent: rows.Text(7)}
}

func collect(rows *do.Rows, err error, what string) ([]Event, error) {
	if err != nil {
		return nil, printf.Errorf("read %s: %w", what, err)
	}
	out := make([]Event, 0, rows.Len())
	for rows.Next() {
		out = append(out, scan(rows))
	}
	return out, rows.Err()
}

// Read reads up to limit events after seq after, in log order; types, if
// any, filters by type (each listed once: a type listed twice reads its
// events twice). maxBytes, if not 0, stops the page at that many bytes of
// data; cut says it did (more events may follow).
func (s *Store) Read(after int64, types []string, limit int, maxBytes int64) (evs []Event, cut bool, err error) {
	return s.readPage(maxBytes, limit, "events", func(cols string, limit int) (string, []any) {
		if len(types) == 0 {
			return `SELECT ` + cols + ` FROM stile_events WHERE seq > ? ORDER BY seq` + do.Limit(limit), []any{after}
		}
		// One index range per type, each cut at limit, merged: a type with a
		// long backlog costs no more than limit rows.
		var sql strings.Builder
		args := make([]any, 0, 2*len(types))
		sql.WriteString(`SELECT ` + cols + ` FROM (`)
		for i, t := range types {
			if i > 0 {
				sql.WriteString(` UNION ALL `)
			}
			sql.WriteString(`SELECT * FROM (SELECT ` + eventColumns + ` FROM stile_events WHERE type = ? AND seq > ? ORDER BY seq` + do.Limit(limit) + `)`)
			args = append(args, t, after)
		}
		sql.WriteString(`) ORDER BY seq` + do.Limit(limit))
		return sql.String(), args
	})
}

// ReadStream reads up to limit events of stream from version from on;
// maxBytes and cut are Read's.
func (s *Store) ReadStream(stream string, from int64, limit int, maxBytes int64) ([]Event, bool, error) {
	return s.readPage(maxBytes, limit, "stream "+stream, func(cols string, limit int) (string, []any) {
		return `SELECT ` + cols + ` FROM stile_events WHERE stream = ? AND version >= ? ORDER BY version` + do.Limit(limit),
			[]any{stream, from}
	})
}

// eventBytes is what an event weighs in a page: its data and names, and a
// fixed cost for the rest; Event.Bytes is the same of an event read.
const eventBytes = `length(data) + length(stream) + length(type) + 64`

// Bytes is what e weighs in a page (eventBytes).
func (e *Event) Bytes() int64 { return int64(len(e.Data)+len(e.Stream)+len(e.Type)) + 64 }

// readPage runs the page query makes, cut at maxBytes of events if not 0.
func (s *Store) readPage(maxBytes int64, limit int, what string, query budget.Query) ([]Event, bool, error) {
	limit, cut, err := budget.Limit(s.db, maxBytes, limit, eventBytes, query)
	if err != nil {
		return nil, false, printf.Errorf("%s: %w", what, err)
	}
	sql, args := query(eventColumns, limit)
	rows, err := s.db.Query(sql, args...)
	evs, err := collect(rows, err, what)
	return evs, cut, err
}

// ReadSeqs reads the events with the given seqs, in log order.
func (s *Store) ReadSeqs(seqs []int64) ([]Event, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	list := make([]byte, 0, 12*len(seqs))
	list = append(list, '[')
	for i, q := range seqs {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, q, 10)
	}
	list = append(list, ']')
	rows, err := s.db.Query(`SELECT `+eventColumns+` FROM stile_events
		WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq`, string(list))
	return collect(rows, err, "events by seq")
}

// CountAfter counts the events of the given types after seq after, up to
// max (a reaction's lag, bounded so reading it stays cheap), in one
// statement: a range of the (type, seq) index per type.
func (s *Store) CountAfter(after int64, types []string, max int64) (int64, error) {
	if len(types) == 0 {
		return 0, nil
	}
	sql := make([]byte, 0, 128)
	sql = append(sql, "SELECT count(*) FROM (SELECT 1 FROM stile_events WHERE type IN (?"...)
	args := make([]any, 0, len(types)+1)
	args = append(args, types[0])
	for _, t := range types[1:] {
		sql = append(sql, ", ?"...)
		args = append(args, t)
	}
	sql = append(append(append(sql, ") AND seq > ?"...), do.Limit(int(max))...), ')')
	rows, err := s.db.Query(string(sql), append(args, after)...)
	if err != nil {
		return 0, printf.Errorf("count events of types %s: %w", strings.Join(types, ", "), err)
	}
	rows.Next()
	n := rows.Int(0)
	return min(n, max), rows.Err()
}
