package host

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/stile-run/stile/api"
)

type tenant struct {
	name     string
	path     string
	mu       sync.Mutex // serializes calls into engine
	engine   Engine
	lastUse  int64         // Manager.uses at the last call; guarded by Manager.mu
	isOpen   atomic.Bool   // engine != nil, readable without mu
	closing  chan struct{} // closed once an evicted engine has closed; guarded by t.mu
	memory   atomic.Int64  // what the open engine last reported (Sized)
	alarmAt  atomic.Int64
	failures atomic.Int64 // consecutive failed alarm runs
	restarts atomic.Int64 // engines discarded after a trap

	wakeMu sync.Mutex
	finish chan struct{} // closed and replaced to wake held waits for jobs

	// held are the claims held for the tenant, heldBy their count by
	// token. A claim is entered by the call that answered it empty, with
	// t.mu held, so a later call's wake never misses it.
	heldMu sync.Mutex
	held   map[*waiter]struct{}
	heldBy map[string]int
}

func (m *Manager) tenant(name string) *tenant {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tenants[name]
	if !ok {
		t = &tenant{name: name, path: m.databasePath(name),
			finish: make(chan struct{}), held: map[*waiter]struct{}{}, heldBy: map[string]int{}}
		m.tenants[name] = t
	}
	return t
}

// Exists reports whether tenant was created: its engine is open or its
// database file is on disk. It opens nothing.
func (m *Manager) Exists(name string) bool {
	if !api.ValidTenant(name) {
		return false
	}
	m.mu.Lock()
	t := m.tenants[name]
	m.mu.Unlock()
	if t != nil && t.isOpen.Load() {
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
