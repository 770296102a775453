package directory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/atomicfile"
)

// entry is one tenant, as the files keep it.
type entry struct {
	api.TenantInfo
	// Seq is the directory's change counter when the tenant last became
	// ready: a long-poll after_seq=N waits for an entry with Seq > N.
	Seq int64 `json:"seq"`
	// Failing is what the tenant last said is failing in it (nil: it
	// never said anything was).
	Failing *api.FailingNote `json:"failing,omitempty"`
}

// MarshalJSON writes the tenant's fields, Seq and Failing. (Without it
// the embedded TenantInfo's MarshalJSON would be promoted, and Seq lost:
// a tenant ready before a restart was then missing from ready queries.)
func (e *entry) MarshalJSON() ([]byte, error) {
	b := e.TenantInfo.AppendJSON(nil)
	b = append(b[:len(b)-1], `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	if e.Failing != nil {
		b = e.Failing.AppendJSON(append(b, `,"failing":`...))
	}
	return append(b, '}'), nil
}

type file struct {
	Seq     int64    `json:"seq"`
	Tenants []*entry `json:"tenants"`
}

// change is one line of the journal: a tenant's entry after a note, or
// the name of an erased tenant, and the directory's counter after it.
type change struct {
	Seq    int64  `json:"seq"`
	Entry  *entry `json:"entry,omitempty"`
	Erased string `json:"erased,omitempty"`
}

// Dir is the directory of one data directory. It is safe for concurrent
// use.
//
// It is kept in two files: a snapshot (directory.json) and a journal
// beside it (directory.journal), one JSON line per note. A note appends
// one line, so its cost does not grow with the number of tenants; the
// snapshot is rewritten, and the journal emptied, once the journal holds
// more lines than compactEvery or than twice the tenants. The journal's
// last line for a tenant is what the snapshot written after it says, so
// replaying a journal over a newer snapshot (a crash between writing the
// snapshot and emptying the journal) changes nothing.
type Dir struct {
	path    string // the snapshot
	mu      sync.Mutex
	seq     int64
	tenants map[string]*entry
	wake    chan struct{} // closed and replaced when a tenant becomes ready
	journal *os.File      // opened at the first note
	size    int64         // of the journal: where the next line goes
	lines   int           // in the journal
	damage  string        // why what Open read was unreadable ("" if it was not)
}

// compactEvery is the fewest journal lines that trigger a new snapshot.
const compactEvery = 1024

// journalPath is where the journal of the snapshot at path is kept.
func journalPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".journal"
}

// Open reads the directory at path (directory.json in the data
// directory) and its journal, or starts an empty one. A journal left by
// an earlier process is folded into a new snapshot at once; its last line
// may be cut short (the process died writing it) and is then ignored.
// An unreadable snapshot or journal line is never a refusal to open: what
// can be read is kept, Damage says what could not, and the host notes its
// tenants again (the directory says only what tenants said of themselves).
func Open(path string) (*Dir, error) {
	d := &Dir{path: path, tenants: map[string]*entry{}, wake: make(chan struct{})}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read the tenant directory: %w", err)
	default:
		var f file
		if err := json.Unmarshal(b, &f); err != nil {
			d.damage = fmt.Sprintf("%s is unreadable (%v)", path, err)
			break
		}
		d.seq = f.Seq
		for _, e := range f.Tenants {
			if e != nil && api.ValidTenant(e.Name) {
				d.tenants[e.Name] = e
			}
		}
	}
	replayed, err := d.replay()
	if err != nil {
		return nil, err
	}
	// Directories written before the ready sequence was kept say 0 for
	// every tenant, which no ready query finds: a ready one gets a
	// sequence now.
	renumbered := false
	for _, name := range slices.Sorted(maps.Keys(d.tenants)) {
		if e := d.tenants[name]; e.Ready && e.Seq == 0 {
			d.seq++
			e.Seq, renumbered = d.seq, true
		}
	}
	if replayed || renumbered || d.damage != "" {
		if err := d.compact(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// replay applies the journal's lines to what the snapshot said, and
// reports whether there were any.
func (d *Dir) replay() (bool, error) {
	jp := journalPath(d.path)
	b, err := os.ReadFile(jp)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the tenant directory's journal: %w", err)
	}
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		var c change
		if err := json.Unmarshal(line, &c); err != nil {
			if i == len(lines)-1 {
				break // cut short by a crash: the note it held is lost
			}
			if d.damage == "" {
				d.damage = fmt.Sprintf("%s, line %d, is unreadable (%v)", jp, i+1, err)
			}
			continue
		}
		d.seq = max(d.seq, c.Seq)
		// A later sequence than any read is safe; a damaged snapshot's
		// sequence is lost, and the host's notes after it start above
		// every line read here.
		switch {
		case c.Erased != "":
			delete(d.tenants, c.Erased)
		case c.Entry != nil && api.ValidTenant(c.Entry.Name):
			d.tenants[c.Entry.Name] = c.Entry
		}
	}
	return len(b) > 0, nil
}

// Damage says why what Open read was unreadable, "" if it was not: the
// directory then lacks what it lost, until the host notes its tenants.
func (d *Dir) Damage() string { return d.damage }

// Has says whether the directory lists tenant.
func (d *Dir) Has(tenant string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.tenants[tenant]
	return ok
}

// Len is the number of tenants the directory lists.
func (d *Dir) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.tenants)
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
		// Nothing of an erased tenant stays in the files: the snapshot is
		// rewritten without it and the journal, which named it, emptied.
		delete(d.tenants, n.Tenant)
		d.seq++
		return d.compact()
	}
	e, ok := d.tenants[n.Tenant]
	if !ok {
		e = &entry{TenantInfo: api.TenantInfo{Name: n.Tenant, FirstSeen: at}}
		d.tenants[n.Tenant] = e
	}
	e.LastSeen, e.Version = at, n.Version
	e.Module, e.Schema, e.Failed = n.Module, n.Schema, n.Failed
	if n.Usage.Day != "" {
		e.Usage = &n.Usage
	}
	if !n.VersionsOnly {
		becameReady := n.Ready && !e.Ready
		e.Ready = n.Ready
		d.seq++
		if becameReady {
			e.Seq = d.seq
			close(d.wake)
			d.wake = make(chan struct{})
		}
	}
	return d.record(change{Seq: d.seq, Entry: e})
}

// NoteFailing records what a tenant said is failing in it (n.Tenant names
// it). A tenant the directory does not list is refused: its first note
// lists it.
func (d *Dir) NoteFailing(n api.FailingNote) error {
	if !api.ValidTenant(n.Tenant) {
		return fmt.Errorf("directory: tenant %q: %s", n.Tenant, api.InvalidTenant.Message)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.tenants[n.Tenant]
	if !ok {
		return fmt.Errorf("directory: tenant %q is not listed: its note of what is failing is dropped", n.Tenant)
	}
	e.Failing = &n
	if len(n.Groups) == 0 && n.More == 0 {
		e.Failing = nil
	}
	return d.record(change{Seq: d.seq, Entry: e})
}

// Failing is what is failing in the tenants whose names start with
// prefix, from what they said (api.FleetFailing).
func (d *Dir) Failing(prefix string) api.FleetFailingResponse {
	d.mu.Lock()
	notes := make([]api.FailingNote, 0, 16)
	for name, e := range d.tenants {
		if e.Failing != nil && strings.HasPrefix(name, prefix) {
			notes = append(notes, *e.Failing)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(notes, func(a, b api.FailingNote) int { return strings.Compare(a.Tenant, b.Tenant) })
	return api.FleetFailing(notes)
}

// record appends a change to the journal, and folds the journal into a
// new snapshot when it has grown long.
func (d *Dir) record(c change) error {
	if d.journal == nil {
		if err := os.MkdirAll(filepath.Dir(d.path), 0o755); err != nil {
			return fmt.Errorf("write the tenant directory: %w", err)
		}
		// Written at offsets of its own, not O_APPEND: a file opened to
		// append cannot be truncated everywhere (Windows).
		f, err := os.OpenFile(journalPath(d.path), os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("write the tenant directory: %w", err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("write the tenant directory: %w", err)
		}
		d.journal, d.size = f, info.Size()
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := d.journal.WriteAt(b, d.size); err != nil {
		// A line written in part would make the next one unreadable:
		// cut it off (the note is lost, as its caller is told).
		d.journal.Truncate(d.size)
		return fmt.Errorf("write the tenant directory's journal: %w", err)
	}
	// On the disk before the note is taken as recorded: a power loss
	// loses no note that was acknowledged, and cuts at most the last line.
	if err := d.journal.Sync(); err != nil {
		return fmt.Errorf("sync the tenant directory's journal: %w", err)
	}
	d.size += int64(len(b))
	d.lines++
	if d.lines > max(compactEvery, 2*len(d.tenants)) {
		return d.compact()
	}
	return nil
}

// compact writes the snapshot, then empties the journal.
func (d *Dir) compact() error {
	f := file{Seq: d.seq, Tenants: make([]*entry, 0, len(d.tenants))}
	for _, e := range d.tenants {
		f.Tenants = append(f.Tenants, e)
	}
	sort.Slice(f.Tenants, func(i, j int) bool { return f.Tenants[i].Name < f.Tenants[j].Name })
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(d.path), 0o755); err != nil {
		return fmt.Errorf("write the tenant directory: %w", err)
	}
	// The snapshot reaches the disk before the journal it replaces is
	// emptied: a power loss between them must not lose both.
	if err := atomicfile.Write(d.path, b, 0o644); err != nil {
		return fmt.Errorf("write the tenant directory: %w", err)
	}
	if d.journal != nil {
		err = d.journal.Truncate(0)
	} else {
		err = os.Truncate(journalPath(d.path), 0)
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("empty the tenant directory's journal: %w", err)
	}
	d.lines, d.size = 0, 0
	return nil
}

// Close folds the journal into the snapshot and closes it.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.journal == nil {
		return nil
	}
	err := d.compact()
	err = errors.Join(err, d.journal.Close())
	d.journal = nil
	return err
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

// CountPrefix counts the tenants whose names start with prefix, and says
// whether name is one of them (a quota of tenants per token prefix).
func (d *Dir) CountPrefix(prefix, name string) (n int, listed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for t := range d.tenants {
		if strings.HasPrefix(t, prefix) {
			n++
		}
	}
	_, listed = d.tenants[name]
	return n, listed
}

// Names lists up to limit tenants whose names start with prefix and come
// after after, in name order.
func (d *Dir) Names(prefix, after string, limit int) []string {
	d.mu.Lock()
	names := make([]string, 0, limit)
	for name := range d.tenants {
		if name > after && strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	d.mu.Unlock()
	slices.Sort(names)
	return names[:min(limit, len(names))]
}
