package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/directory"
	"github.com/stile-run/stile/host/dosql"
)

// tenantFiles names the tenants with a file in the data directory.
func (m *Manager) tenantFiles() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(m.cfg.DataDir, "tenants"))
	if err != nil {
		return nil, fmt.Errorf("host: list the tenants: %w", err)
	}
	var names []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".sqlite"); ok && !e.IsDir() && api.ValidTenant(name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// rebuild asks each of the tenants named for its status, in the
// background: its answer carries the tenant's next alarm (which the call
// sets, as any call does) and what the directory says of it. A tenant the
// directory lost is noted ready, so that executors look at it; its first
// claim that finds nothing notes it idle.
func (m *Manager) rebuild(names []string, alarms, dir bool) {
	ctx := context.Background()
	for _, name := range names {
		select {
		case <-m.stop:
			return
		default:
		}
		if !alarms && m.cfg.Directory.Has(name) && m.cfg.Directory.Damage() == "" {
			continue
		}
		resp, err := m.Inspect(ctx, name, do.Request{Kind: do.KindAPI, Method: api.RouteStatus.Method, Path: api.RouteStatus.Path(name),
			Headers: do.Headers{{Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}}})
		if err != nil {
			m.log.Warn("could not ask a tenant for its status; its next request does", "tenant", name, "err", err)
			continue
		}
		if !dir {
			continue
		}
		n := api.DirectoryNote{Tenant: name, Erased: resp.Status == 410}
		if resp.Status == 200 {
			var st api.Status
			if err := json.Unmarshal(resp.Body, &st); err != nil {
				m.log.Warn("a tenant's status is unreadable", "tenant", name, "err", err)
				continue
			}
			n.First, n.Ready, n.Version, n.Module, n.Schema = true, true, st.ModuleSchema.Version, st.Module, st.StileSchema.Version
		} else if !n.Erased {
			continue
		}
		if err := m.cfg.Directory.Note(m.cfg.Clock.Now(), n); err != nil {
			m.log.Warn("could not note the tenant in the directory", "tenant", name, "err", err)
		}
	}
	if alarms {
		if err := m.alarms.file.save(m.alarmSnapshot); err != nil {
			m.log.Warn("could not persist alarms", "err", err)
		}
	}
}

// note tells the directory what the tenant said; a failure is logged and
// never fails the tenant's request.
func (m *Manager) note(tenant, header string) {
	n, err := api.DecodeDirectoryNote([]byte(header))
	if err == nil && n.Tenant != tenant {
		err = fmt.Errorf("the note names tenant %q", n.Tenant)
	}
	if err == nil {
		err = m.cfg.Directory.Note(m.cfg.Clock.Now(), n)
	}
	if err != nil {
		m.log.Warn("could not note the tenant in the directory", "tenant", tenant, "err", err)
	}
}

// noteFailing tells the directory what the tenant said is failing in it;
// a failure is logged and never fails the tenant's request.
func (m *Manager) noteFailing(tenant, header string) {
	n, err := api.DecodeFailingNote([]byte(header))
	if err == nil && n.Tenant != tenant {
		err = fmt.Errorf("the note names tenant %q", n.Tenant)
	}
	if err == nil {
		err = m.cfg.Directory.NoteFailing(n)
	}
	if err != nil {
		m.log.Warn("could not note what is failing in the tenant in the directory", "tenant", tenant, "err", err)
	}
}

// scrub leaves nothing of a tenant just erased on the disk but its
// tombstone (t.mu is held): its engine is closed, its file rebuilt
// without the freed pages and its write-ahead log emptied and removed,
// and its alarm dropped from the schedule's file. The next request opens
// the file again, and finds the tombstone.
func (m *Manager) scrub(t *tenant) {
	t.watchers.erased()
	if err := m.closeEngine(t); err != nil {
		m.log.Warn("closing an erased tenant failed", "tenant", t.name, "err", err)
	}
	if err := dosql.Scrub(t.path); err != nil {
		m.log.Error("an erased tenant's file still holds what it erased", "tenant", t.name, "err", err)
	}
	if err := m.alarms.file.forget(t.name); err != nil {
		m.log.Warn("could not persist alarms", "err", err)
	}
}

// Directory is the deployment's tenant directory.
func (m *Manager) Directory() *directory.Dir { return m.cfg.Directory }

// Now is the host's clock (Unix ms), the one its tenants are given.
func (m *Manager) Now() int64 { return m.cfg.Clock.Now() }

// Closed reports whether the manager was closed.
func (m *Manager) Closed() bool { return m.closed.Load() }
