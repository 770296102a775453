package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
)

// entry is one tenant, as the file keeps it.
type entry struct {
	api.TenantInfo
	// Seq is the directory's change counter when the tenant last became
	// ready: a long-poll after_seq=N waits for an entry with Seq > N.
	Seq int64 `json:"seq"`
}

type file struct {
	Seq     int64    `json:"seq"`
	Tenants []*entry `json:"tenants"`
}

// Dir is the directory of one data directory. It is safe for concurrent
// use.
type Dir struct {
	path    string
	mu      sync.Mutex
	seq     int64
	tenants map[string]*entry
	wake    chan struct{} // closed and replaced when a tenant becomes ready
}

// Open reads the directory at path (directory.json in the data
// directory), or starts an empty one.
func Open(path string) (*Dir, error) {
	d := &Dir{path: path, tenants: map[string]*entry{}, wake: make(chan struct{})}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the tenant directory: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read the tenant directory %s: %w", path, err)
	}
	d.seq = f.Seq
	for _, e := range f.Tenants {
		if api.ValidTenant(e.Name) {
			d.tenants[e.Name] = e
		}
	}
	return d, nil
}

// Note records what a tenant said at now (Unix ms).
func (d *Dir) Note(now int64, n api.DirectoryNote) error {
	if !api.ValidTenant(n.Tenant) {
		return fmt.Errorf("directory: tenant %q: %s", n.Tenant, api.InvalidTenant.Message)
	}
	at := time.UnixMilli(now).UTC()
	d.mu.Lock()
	defer d.mu.Unlock()
	if n.Erased {
		delete(d.tenants, n.Tenant)
		d.seq++
		return d.save()
	}
	e, ok := d.tenants[n.Tenant]
	if !ok {
		e = &entry{TenantInfo: api.TenantInfo{Name: n.Tenant, FirstSeen: at}}
		d.tenants[n.Tenant] = e
	}
	e.LastSeen, e.Version = at, n.Version
	e.Module, e.Schema, e.Failed = n.Module, n.Schema, n.Failed
	if n.VersionsOnly {
		return d.save()
	}
	becameReady := n.Ready && !e.Ready
	e.Ready = n.Ready
	d.seq++
	if becameReady {
		e.Seq = d.seq
		close(d.wake)
		d.wake = make(chan struct{})
	}
	return d.save()
}

func (d *Dir) save() error {
	f := file{Seq: d.seq, Tenants: make([]*entry, 0, len(d.tenants))}
	for _, e := range d.tenants {
		f.Tenants = append(f.Tenants, e)
	}
	sort.Slice(f.Tenants, func(i, j int) bool { return f.Tenants[i].Name < f.Tenants[j].Name })
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp := d.path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(d.path), 0o755); err != nil {
		return fmt.Errorf("write the tenant directory: %w", err)
	}
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write the tenant directory: %w", err)
	}
	return os.Rename(tmp, d.path)
}

// List answers a query, waiting as it asks.
func (d *Dir) List(ctx context.Context, q api.TenantsQuery) (api.TenantsResponse, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, api.MaxTenantsPage)
	wait := min(time.Duration(q.WaitMs)*time.Millisecond, api.MaxWait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		d.mu.Lock()
		resp, wake := d.page(q), d.wake
		d.mu.Unlock()
		if len(resp.Tenants) > 0 || !q.Ready || wait <= 0 {
			return resp, nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return resp, nil
		case <-ctx.Done():
			return resp, nil
		}
	}
}

func (d *Dir) page(q api.TenantsQuery) api.TenantsResponse {
	names := make([]string, 0, len(d.tenants))
	for name, e := range d.tenants {
		if name > q.After && (!q.Ready || (e.Ready && e.Seq > q.AfterSeq)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	resp := api.TenantsResponse{Tenants: []api.TenantInfo{}, Seq: d.seq}
	for i, name := range names {
		if i == q.Limit {
			resp.Next = names[i-1]
			break
		}
		resp.Tenants = append(resp.Tenants, d.tenants[name].TenantInfo)
	}
	return resp
}
