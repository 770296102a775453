package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

// tenant is one tenant the manager has seen: its engine (open or not),
// its alarm, and its requests held by the host.
type tenant struct {
	name     string
	path     string
	mu       sync.Mutex // serializes calls into engine
	engine   Engine
	lastUse  int64         // Manager.mu.uses at the last call; guarded by Manager.mu
	isOpen   atomic.Bool   // engine != nil, readable without mu
	closing  chan struct{} // closed once an evicted engine has closed; guarded by t.mu
	memory   atomic.Int64  // what the open engine last reported (Sized)
	alarmAt  atomic.Int64
	failures atomic.Int64 // consecutive failed alarm runs
	restarts atomic.Int64 // engines discarded after a trap

	holds holds // the claims held for the tenant, and waits for jobs to end (held.go)
	// watchers are the tenant's live watches (watch.go).
	watchers watchers
	use      use // the running count the module records as the tenant's usage
}

// use is a tenant's running count since the manager first saw it (gen
// names that): the requests and alarms it served, counted as they start
// (a held claim run again is one request), and the rows and module time
// of its calls, counted as they end. The module hears it on every call
// (stile-usage) and records what grew since its last record; Usage reads
// it without waiting for a call.
type use struct {
	gen                   string
	requests, alarms      atomic.Int64
	read, written, micros atomic.Int64
}

// header is the count as stile-usage carries it,
// with the mode: "keep" (the count outlives the module's instances, so the
// module needs no alarm to record it) or "flush" (record it now: the
// manager is closing).
func (u *use) header(mode string) do.Header {
	return do.Header{Name: do.HeaderUsage, Value: u.gen + "," + strconv.FormatInt(u.requests.Load(), 10) + "," +
		strconv.FormatInt(u.alarms.Load(), 10) + "," + strconv.FormatInt(u.read.Load(), 10) + "," +
		strconv.FormatInt(u.written.Load(), 10) + "," + strconv.FormatInt(u.micros.Load(), 10) + "," + mode}
}

// Usage is a tenant's count as the manager keeps it: since the manager
// first saw the tenant, the requests and alarms it served and the rows and
// module time of its calls (what the tenant records as its usage, from
// this host).
type Usage struct {
	Tenant                        string
	Requests, Alarms              int64
	RowsRead, RowsWritten, Micros int64
}

// Usage lists the count of every tenant the manager has seen, by name.
func (m *Manager) Usage() []Usage {
	m.mu.Lock()
	ts := make([]*tenant, 0, len(m.mu.tenants))
	for _, t := range m.mu.tenants {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	out := make([]Usage, 0, len(ts))
	for _, t := range ts {
		out = append(out, Usage{Tenant: t.name, Requests: t.use.requests.Load(), Alarms: t.use.alarms.Load(),
			RowsRead: t.use.read.Load(), RowsWritten: t.use.written.Load(), Micros: t.use.micros.Load()})
	}
	slices.SortFunc(out, func(a, b Usage) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out
}

// newGen names a tenant's count: unique to this process's sight of it.
func newGen() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (m *Manager) tenant(name string) *tenant {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.mu.tenants[name]
	if !ok {
		t = &tenant{name: name, path: m.databasePath(name), use: use{gen: newGen()},
			holds: holds{finish: make(chan struct{}), held: map[*waiter]struct{}{}, by: map[string]int{}}}
		m.mu.tenants[name] = t
	}
	return t
}

// seen is the tenant named if the manager has seen it, else nil; unlike
// tenant, it adds none.
func (m *Manager) seen(name string) *tenant {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.tenants[name]
}

// Exists reports whether tenant was created: its engine is open or its
// database file is on disk. It opens nothing.
func (m *Manager) Exists(name string) bool {
	if !api.ValidTenant(name) {
		return false
	}
	if t := m.seen(name); t != nil && t.isOpen.Load() {
		return true
	}
	return fileExists(m.databasePath(name))
}

// databasePath is where tenant name's SQLite database is.
func (m *Manager) databasePath(name string) string {
	return filepath.Join(m.cfg.DataDir, "tenants", name+".sqlite")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeDatabase removes a SQLite database and the files beside it.
func removeDatabase(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// databaseSize is the size of a tenant's SQLite files: the database and
// its write-ahead log (0 for a tenant with none yet).
func databaseSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
