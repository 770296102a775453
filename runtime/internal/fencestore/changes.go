package fencestore

import "github.com/stile-run/stile/fence"

// Change is a job a write of the transaction changed, as the write left it
// (what it returned: no read more), for the tenant's watchers.
type Change struct {
	ID       int64
	Kind     string
	State    string // a fence.State, or api.JobDeleted
	Attempt  int64
	Progress []byte // the progress the write published (nil: none)
}

// maxChanges bounds the changes a store keeps between two Changes calls;
// more are counted as "more" only.
const maxChanges = 64

// changed notes a job the current transaction changed.
func (s *Store) changed(id int64, kind string, state fence.State, attempt int64, progress []byte) {
	if !s.Watched {
		return
	}
	if len(s.changes) >= maxChanges {
		s.changesMore = true
		return
	}
	s.changes = append(s.changes, Change{ID: id, Kind: kind, State: string(state), Attempt: attempt, Progress: progress})
}

// Changes reports, and forgets, the jobs the writes since the last call
// changed, in order (a job may repeat: its last entry is how the writes
// left it), and whether more changed than listed. Like Woke, what a
// transaction that rolled back noted must be forgotten by its caller
// (Changes, or RollbackChanges for a nested one).
func (s *Store) Changes() ([]Change, bool) {
	c, more := s.changes, s.changesMore
	s.changes, s.changesMore = nil, false
	return c, more
}

// ChangesMark is where a nested transaction starts, for RollbackChanges.
func (s *Store) ChangesMark() int { return len(s.changes) }

// RollbackChanges forgets the changes noted since mark: a nested
// transaction rolled back. A "more" noted since stays: at worst a watcher
// reads again.
func (s *Store) RollbackChanges(mark int) {
	if mark <= len(s.changes) {
		s.changes = s.changes[:mark]
	}
}
