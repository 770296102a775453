package host

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/stile-run/stile/api"
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
}

func (m *Manager) tenant(name string) *tenant {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.mu.tenants[name]
	if !ok {
		t = &tenant{name: name, path: m.databasePath(name),
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
