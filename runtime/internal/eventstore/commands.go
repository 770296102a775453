package eventstore

import (
	"encoding/hex"
	"hash/fnv"

	"github.com/stile-run/stile/internal/printf"
)

// CommandRecord is a command in the ledger.
type CommandRecord struct {
	ID          string
	Aggregate   string
	AggregateID string
	Type        string
	Digest      string
	FirstSeq    int64 // 0: it appended nothing
	LastSeq     int64
	Version     int64  // the stream's version after it
	JobIDs      []byte // JSON array of the job ids it enqueued
	Source      string
	At          int64
}

// Digest fingerprints a command, to tell a repeat of it from another
// command reusing its id.
func Digest(aggregate, aggregateID, typ string, data []byte) string {
	if string(data) == "null" {
		data = nil // null data is no data: the same command either way
	}
	h := fnv.New128a() // see inbox.derive: no adversary, no need for crypto
	for _, p := range [][]byte{[]byte(aggregate), []byte(aggregateID), []byte(typ), data} {
		h.Write([]byte(printf.Sprintf("%d:", len(p))))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Command reads the ledger's record of a command id.
func (s *Store) Command(id string) (CommandRecord, bool, error) {
	rows, err := s.db.Query(`SELECT id, aggregate, aggregate_id, type, digest, COALESCE(first_seq, 0),
		COALESCE(last_seq, 0), version, job_ids, source, at FROM stile_commands WHERE id = ?`, id)
	if err != nil {
		return CommandRecord{}, false, printf.Errorf("read command %s: %w", id, err)
	}
	if !rows.Next() {
		return CommandRecord{}, false, rows.Err()
	}
	r := CommandRecord{ID: rows.Text(0), Aggregate: rows.Text(1), AggregateID: rows.Text(2), Type: rows.Text(3),
		Digest: rows.Text(4), FirstSeq: rows.Int(5), LastSeq: rows.Int(6), Version: rows.Int(7),
		JobIDs: rows.Bytes(8), Source: rows.Text(9), At: rows.Int(10)}
	return r, true, rows.Err()
}

// RecordCommand adds a command to the ledger. An id already there is a
// constraint error: callers check Command first.
func (s *Store) RecordCommand(r CommandRecord) error {
	var first, last any
	if r.FirstSeq > 0 {
		first, last = r.FirstSeq, r.LastSeq
	}
	jobs := r.JobIDs
	if len(jobs) == 0 {
		jobs = []byte("[]")
	}
	err := s.db.Exec(`INSERT INTO stile_commands (id, aggregate, aggregate_id, type, digest, first_seq, last_seq,
		version, job_ids, source, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Aggregate, r.AggregateID, r.Type, r.Digest, first, last, r.Version, string(jobs), r.Source, r.At)
	if err != nil {
		return printf.Errorf("record command %s: %w", r.ID, err)
	}
	return nil
}

// ReadRange reads the events with seqs first to last, in order.
func (s *Store) ReadRange(first, last int64) ([]Event, error) {
	if first == 0 {
		return nil, nil
	}
	rows, err := s.db.Query(`SELECT `+eventColumns+` FROM stile_events WHERE seq BETWEEN ? AND ? ORDER BY seq`, first, last)
	return collect(rows, err, "events of a command")
}
