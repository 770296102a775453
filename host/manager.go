package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/directory"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/internal/atomicfile"
)

// Config configures a Manager.
type Config struct {
	// Factory opens each tenant's engine.
	Factory Factory
	// Clock is the time given to modules. Default: RealClock.
	Clock Clock
	// DataDir holds one SQLite file per tenant (tenants/<name>.sqlite) and
	// the alarm schedule (alarms.json).
	DataDir string
	// MaxOpen bounds the engines kept open; the least recently used idle
	// one is closed beyond it. Default 256.
	MaxOpen int
	// MaxMemory, if set, bounds the memory of the open engines (as those
	// implementing Sized report it, after each call): opening or growing
	// one beyond it closes the least recently used idle ones.
	MaxMemory int64
	// CallTimeout bounds one call into a module (the Durable Object's CPU
	// limit is 30 s by default). Default 30 s.
	CallTimeout time.Duration
	// ScheduleAlarms runs alarms from a background goroutine on the real
	// clock. Tests with a ManualClock leave it off and call FireDue.
	ScheduleAlarms bool
	// Logger receives the manager's log lines. Default: slog.Default().
	Logger *slog.Logger
	// Pusher, if set, delivers the pushes tenants ask for (when a commit
	// made work ready) to an executor. Without one, tenants push nothing
	// and workers claim by polling.
	Pusher Pusher
	// CreateRole says which writes create a tenant that does not exist
	// (api.ParseCreateRole): a role, whose writes and those of the roles
	// above it create, or "none" (only PUT /v1/t/{tenant}). Default:
	// writer. Any other request for a tenant that does not exist answers
	// 404 tenant_not_found before any storage is opened.
	CreateRole string
	// Directory is told what tenants say of themselves (their first use,
	// idle or ready): the deployment's tenant directory, which executors
	// without a tenant list long-poll. Default: directory.json in DataDir.
	Directory *directory.Dir
}

// Pusher delivers a push to an executor. Push returns once an executor
// accepted it (or could not), never after the work: the tenant is not
// held while handlers run. The executor ends the push itself when it
// stops claiming.
type Pusher interface {
	Push(ctx context.Context, p api.PushRequest) error
}

// PushFunc is a Pusher that is a function.
type PushFunc func(ctx context.Context, p api.PushRequest) error

// Push implements Pusher.
func (f PushFunc) Push(ctx context.Context, p api.PushRequest) error { return f(ctx, p) }

// Manager runs tenants: one engine each, calls serialized per tenant,
// alarms scheduled from committed state, claims held open by the host.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	creates api.Role // cfg.CreateRole parsed ("": none)
	mu      sync.Mutex
	tenants map[string]*tenant
	uses    int64
	alarms  *alarmFile
	ownDir  bool // the directory was opened here, and is closed with the manager
	kick    chan struct{}
	stop    chan struct{}
	done    sync.WaitGroup
	pushes  sync.WaitGroup // deliveries in progress
	closing sync.WaitGroup // evicted engines closing in the background
	closed  atomic.Bool

	openNow   atomic.Int64 // engines open
	memory    atomic.Int64 // their Sized memory
	opens     atomic.Int64 // engines opened, ever
	evictions atomic.Int64 // idle engines closed to stay within MaxOpen or MaxMemory, or by Evict
}

// Stats is a snapshot of a manager's engines.
type Stats struct {
	Tenants   int   // tenants seen since the manager started
	Open      int   // engines open now
	Memory    int64 // bytes the open engines reported (Sized): at open, and after each call under MaxMemory
	Opens     int64 // engines opened since the start (first uses and reopenings)
	Evictions int64 // idle engines closed to stay within MaxOpen or MaxMemory
}

// IsOpen says whether tenant's engine is open (a request would not need
// to open it).
func (m *Manager) IsOpen(name string) bool {
	m.mu.Lock()
	t := m.tenants[name]
	m.mu.Unlock()
	return t != nil && t.isOpen.Load()
}

// Stats reports the manager's engines.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	n := len(m.tenants)
	m.mu.Unlock()
	return Stats{Tenants: n, Open: int(m.openNow.Load()), Memory: m.memory.Load(), Opens: m.opens.Load(), Evictions: m.evictions.Load()}
}

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

// waiter is one held claim: the work it waits for (hold; any: whatever
// wakes), its token, and the channel a matching wake signals.
type waiter struct {
	hold  do.Hold
	any   bool
	token string
	woken chan struct{} // buffered: a wake is never lost, nor blocks
}

// NewManager starts a manager. Close it to release every engine.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Factory == nil {
		return nil, errors.New("host: Config.Factory is required")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("host: Config.DataDir is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.MaxOpen <= 0 {
		cfg.MaxOpen = 256
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "tenants"), 0o755); err != nil {
		return nil, fmt.Errorf("host: create data directory: %w", err)
	}
	ownDir := false
	if cfg.Directory == nil {
		d, err := directory.Open(filepath.Join(cfg.DataDir, "directory.json"))
		if err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		cfg.Directory, ownDir = d, true
	}
	creates, err := api.ParseCreateRole(cfg.CreateRole)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	alarms, alarmsLost, err := loadAlarms(filepath.Join(cfg.DataDir, "alarms.json"))
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, creates: creates, tenants: map[string]*tenant{}, alarms: alarms, ownDir: ownDir,
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
	// Alarms survive a restart: tenants that had one get it back.
	for name, at := range alarms.snapshot() {
		if api.ValidTenant(name) {
			m.tenant(name).alarmAt.Store(at)
		}
	}
	// What the host keeps beside the tenants' files is rebuilt from them
	// when it is lost: never a refusal to start.
	names, err := m.tenantFiles()
	if err != nil {
		return nil, err
	}
	dirLost := cfg.Directory.Damage()
	if dirLost == "" && cfg.Directory.Len() == 0 && len(names) > 0 {
		dirLost = "the tenant directory is empty"
	}
	if len(names) > 0 && (alarmsLost != "" || dirLost != "") {
		m.log.Warn("rebuilding the host's records from the tenants' files", "alarms", alarmsLost, "directory", dirLost,
			"tenants", len(names))
		m.done.Add(1)
		go m.rebuild(names, alarmsLost != "", dirLost != "")
	}
	if cfg.ScheduleAlarms {
		m.done.Add(1)
		go m.schedule()
	}
	return m, nil
}

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
	defer m.done.Done()
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
		resp, err := m.Do(ctx, name, do.Request{Kind: do.KindAPI, Method: "GET", Path: "/" + api.Version + "/t/" + name + "/status",
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
		if err := m.alarms.save(m.alarmSnapshot()); err != nil {
			m.log.Warn("could not persist alarms", "err", err)
		}
	}
}

// ErrClosed is returned by a closed manager.
var ErrClosed = errors.New("host: manager closed")

// Do serves one request for tenant. A claim that found nothing and asked
// to wait (Response.HoldMs) is held here, never in the module: it is sent
// again whenever another request of the tenant commits work it may claim
// (the module says which work, stile-woke, and which the claim waits for,
// stile-hold; a wait for a job to end: whenever one may have ended), when
// the tenant's alarm comes due, or finally when its wait runs out. Each
// call tells the module how many claims are held (stile-held), so that it
// answers at once a claim that would be one too many.
func (m *Manager) Do(ctx context.Context, name string, req do.Request) (do.Response, error) {
	if m.closed.Load() {
		return do.Response{}, ErrClosed
	}
	if !api.ValidTenant(name) {
		e := api.InvalidTenant
		return do.Response{}, &e
	}
	// A request for a tenant that was never created, unless it creates
	// it, is answered here: it opens no storage and leaves no file.
	creates := m.mayCreate(req)
	if !creates && !m.Exists(name) {
		return notFound(name), nil
	}
	t := m.tenant(name)
	// The module hears which tenant it is from its host, and whether its
	// host delivers pushes.
	req.Headers = append(slices.Clone(req.Headers), do.Header{Name: do.HeaderTenant, Value: name},
		do.Header{Name: do.HeaderCreate, Value: m.createSetting()})
	if m.cfg.Pusher != nil {
		req.Headers = append(req.Headers, do.Header{Name: do.HeaderExecutor, Value: "process"})
	}
	if v, ok := m.cfg.Factory.(Versioned); ok {
		req.Headers = append(req.Headers, do.Header{Name: do.HeaderModule, Value: v.ModuleVersion()})
	}
	if req.Kind == do.KindAPI && do.WantsDatabaseSize(req.Method, req.Path) {
		req.Headers = append(req.Headers, do.Header{Name: do.HeaderDBBytes, Value: strconv.FormatInt(databaseSize(t.path), 10)})
	}
	w := &waiter{token: tokenOf(req.Headers), woken: make(chan struct{}, 1)}
	defer t.unhold(w)
	var deadline int64
	for {
		finish := t.finishChan() // before the call, so no wake-up is missed
		resp, err := m.call(ctx, t, req, w, creates)
		if err != nil {
			return do.Response{}, err
		}
		if resp.HoldMs <= 0 {
			return resp, nil
		}
		now := m.cfg.Clock.Now()
		if deadline == 0 {
			deadline = now + resp.HoldMs
		}
		if now >= deadline {
			return resp, nil
		}
		until := deadline
		if at := t.alarmAt.Load(); at > 0 && at < until {
			until = max(at, now+1)
		}
		wake := (<-chan struct{})(w.woken)
		if resp.Flags&do.FlagHoldFinished != 0 {
			wake = finish // a wait for a job to end
		}
		select {
		case <-wake:
		case <-m.cfg.Clock.After(until):
		case <-ctx.Done():
			return resp, nil
		case <-m.stop:
			return resp, nil
		}
		if ctx.Err() != nil {
			// The caller left as the wake came (select picks either): a
			// claim made now would hold jobs no one receives until their
			// leases end.
			return resp, nil
		}
	}
}

// tokenOf is whose held claims a request's count among: its token's, else
// its principal's.
func tokenOf(hs do.Headers) string {
	if id := hs.Get(do.HeaderTokenID); id != "" {
		return id
	}
	return hs.Get(do.HeaderPrincipal)
}

// call makes one serialized call into the tenant's engine for w's
// request. A claim held before is held no more while it runs again (its
// own call does not count it), and held again if it is answered empty.
// creates says whether the call may create the tenant; one that may not
// finds no storage to open when the tenant does not exist, and is
// answered 404 without opening any.
func (m *Manager) call(ctx context.Context, t *tenant, req do.Request, w *waiter, creates bool) (do.Response, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.closed.Load() {
		return do.Response{}, ErrClosed
	}
	if t.engine == nil && !creates && !fileExists(t.path) {
		return notFound(t.name), nil // a refused creation removed it meanwhile
	}
	t.unhold(w)
	if all, mine := t.heldCounts(w.token); all > 0 {
		req.Headers = append(slices.Clone(req.Headers), do.Header{Name: do.HeaderHeld, Value: do.HeldCounts(all, mine)})
	}
	frame := do.AppendRequest(nil, req)
	if t.engine == nil {
		// Opened whatever the caller does next, as the call is (below).
		if err := m.open(context.WithoutCancel(ctx), t); err != nil {
			return do.Response{}, err
		}
	}
	m.mu.Lock()
	m.uses++
	t.lastUse = m.uses
	m.mu.Unlock()

	// A call runs to its end once started, whatever its caller does: a
	// client that half-closes its connection (or leaves) cancels the
	// request's context, and stopping the module there would discard an
	// instance that did nothing wrong. Only the call's own deadline (the
	// Durable Object's CPU limit) stops it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CallTimeout)
	out, err := t.engine.Handle(cctx, frame)
	cancel()
	if err != nil {
		// A trapped or broken engine is discarded; its transaction was
		// rolled back and the next call instantiates a fresh one.
		m.closeEngine(t)
		t.restarts.Add(1)
		m.log.Warn("tenant module failed; instance discarded", "tenant", t.name, "err", err)
		return do.Response{}, fmt.Errorf("tenant %s: %w", t.name, err)
	}
	// Instances grow with their work: with a bound, measure after each
	// call (without one, what open measured is what Stats reports).
	if m.cfg.MaxMemory > 0 && m.measure(t) && m.memory.Load() > m.cfg.MaxMemory {
		m.evict(t)
	}
	resp, err := do.DecodeResponse(out)
	if err != nil {
		return do.Response{}, fmt.Errorf("tenant %s: %w", t.name, err)
	}
	if resp.Headers.Get(do.HeaderAbsent) != "" {
		// The module answered for a tenant that does not exist, and wrote
		// nothing: the file opening it made goes too.
		if err := m.closeEngine(t); err != nil {
			m.log.Warn("closing a tenant that does not exist failed", "tenant", t.name, "err", err)
		}
		if err := removeDatabase(t.path); err != nil {
			m.log.Warn("could not remove the file of a tenant that does not exist", "tenant", t.name, "err", err)
		}
		return resp, nil
	}
	m.setAlarm(t, resp.AlarmAt)
	if resp.Flags&do.FlagWake != 0 {
		t.wakeHeld(resp.Headers.Get(do.HeaderWoke))
	}
	if resp.Flags&do.FlagFinished != 0 {
		t.finished()
	}
	if resp.HoldMs > 0 && resp.Flags&do.FlagHoldFinished == 0 {
		t.hold(w, resp.Headers.Get(do.HeaderHold))
	}
	if n := resp.Headers.Get(do.HeaderDirectory); n != "" {
		if m.cfg.Directory != nil {
			m.note(t.name, n)
		}
		if note, err := api.DecodeDirectoryNote([]byte(n)); err == nil && note.Erased {
			m.scrub(t)
		}
	}
	if p := resp.Headers.Get(do.HeaderPush); p != "" && m.cfg.Pusher != nil {
		m.pushes.Add(1)
		go m.deliver(t.name, p)
	}
	return resp, nil
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

// scrub leaves nothing of a tenant just erased on the disk but its
// tombstone (t.mu is held): its engine is closed, its file rebuilt
// without the freed pages and its write-ahead log emptied and removed,
// and its alarm dropped from the schedule's file. The next request opens
// the file again, and finds the tombstone.
func (m *Manager) scrub(t *tenant) {
	if err := m.closeEngine(t); err != nil {
		m.log.Warn("closing an erased tenant failed", "tenant", t.name, "err", err)
	}
	if err := dosql.Scrub(t.path); err != nil {
		m.log.Error("an erased tenant's file still holds what it erased", "tenant", t.name, "err", err)
	}
	if err := m.alarms.forget(t.name); err != nil {
		m.log.Warn("could not persist alarms", "err", err)
	}
}

// Directory is the deployment's tenant directory.
func (m *Manager) Directory() *directory.Dir { return m.cfg.Directory }

// deliver sends each push of a response to the Pusher, outside the
// tenant's call; one it could not deliver is ended as failed, so the
// tenant retries it after a backoff.
func (m *Manager) deliver(tenant, header string) {
	defer m.pushes.Done()
	p, err := api.DecodePush([]byte(header))
	if err != nil {
		m.log.Error("tenant sent an unreadable push", "tenant", tenant, "err", err)
		return
	}
	for _, id := range p.IDs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.cfg.Pusher.Push(ctx, api.PushRequest{Tenant: tenant, ID: id, Jobs: p.Jobs, Kinds: p.Kinds, Reactions: p.Reactions,
			LingerMs: p.LingerMs})
		cancel()
		if err == nil {
			continue
		}
		m.log.Warn("push not delivered; the tenant retries it", "tenant", tenant, "push", id, "err", err)
		body := api.PushDone{End: api.PushFailed, Error: err.Error()}.AppendJSON(nil)
		path := "/" + api.Version + "/t/" + tenant + "/pushes/" + id + "/done"
		if _, err := m.Do(context.Background(), tenant, do.Request{Kind: do.KindAPI, Method: "POST", Path: path, Body: body,
			Headers: do.Headers{{Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}}}); err != nil {
			m.log.Warn("could not end the failed push; it expires", "tenant", tenant, "push", id, "err", err)
		}
	}
}

func (m *Manager) open(ctx context.Context, t *tenant) error {
	if t.closing != nil {
		<-t.closing // its database must be closed before it opens again
		t.closing = nil
	}
	m.evict(t)
	e, err := m.cfg.Factory.Open(ctx, t.name, t.path, m.cfg.Clock)
	if err != nil {
		return fmt.Errorf("open tenant %s: %w", t.name, err)
	}
	t.engine = e
	t.isOpen.Store(true)
	m.openNow.Add(1)
	m.opens.Add(1)
	m.measure(t)
	return nil
}

// measure records what t's engine says it holds (t.mu is held); false if
// the engine does not say.
func (m *Manager) measure(t *tenant) bool {
	s, ok := t.engine.(Sized)
	if !ok {
		return false
	}
	n := s.MemoryBytes()
	m.memory.Add(n - t.memory.Swap(n))
	return true
}

// closeEngine closes t's engine (t.mu is held) and forgets its memory.
func (m *Manager) closeEngine(t *tenant) error { return m.detach(t).Close() }

// evictEngine closes an engine that is expected to open again: with
// Evict, if it is Evictable.
func evictEngine(e Engine) error {
	if ev, ok := e.(Evictable); ok {
		return ev.Evict()
	}
	return e.Close()
}

// detach takes t's engine out of the open ones (t.mu is held) and returns
// it, for its caller to close.
func (m *Manager) detach(t *tenant) Engine {
	e := t.engine
	t.engine = nil
	t.isOpen.Store(false)
	m.openNow.Add(-1)
	m.memory.Add(-t.memory.Swap(0))
	return e
}

// over says whether the open engines exceed a bound, counting one more
// engine about to open when opening.
func (m *Manager) over(opening bool) bool {
	open, mem := m.openNow.Load(), m.memory.Load()
	if opening {
		open++
		if n := m.openNow.Load(); n > 0 {
			mem += mem / n // the newcomer costs about the average
		}
	}
	return open > int64(m.cfg.MaxOpen) || (m.cfg.MaxMemory > 0 && mem > m.cfg.MaxMemory)
}

// evict closes least recently used idle engines until the open ones are
// within MaxOpen and MaxMemory, counting t: the tenant about to open (or
// that just grew), whose lock is held and which is never evicted.
func (m *Manager) evict(t *tenant) {
	skip := map[*tenant]bool{}
	for m.over(!t.isOpen.Load()) {
		m.mu.Lock()
		var lru *tenant
		for _, o := range m.tenants {
			if o == t || !o.isOpen.Load() || skip[o] {
				continue
			}
			if lru == nil || o.lastUse < lru.lastUse {
				lru = o
			}
		}
		m.mu.Unlock()
		if lru == nil {
			return // nothing idle to close: the bounds are soft
		}
		if !lru.mu.TryLock() {
			skip[lru] = true // busy: the next least recently used
			continue
		}
		if lru.engine != nil {
			// Detached now, closed in the background: closing an instance
			// and its database takes a millisecond or two that the request
			// opening another need not wait for.
			e := m.detach(lru)
			m.evictions.Add(1)
			m.closing.Add(1)
			done := make(chan struct{})
			lru.closing = done
			go func() {
				defer m.closing.Done()
				defer close(done)
				if err := evictEngine(e); err != nil {
					m.log.Warn("closing an idle tenant failed", "tenant", lru.name, "err", err)
				}
			}()
		}
		lru.mu.Unlock()
	}
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

func (t *tenant) finishChan() <-chan struct{} {
	t.wakeMu.Lock()
	defer t.wakeMu.Unlock()
	return t.finish
}

// finished wakes the held waits for jobs to end.
func (t *tenant) finished() {
	t.wakeMu.Lock()
	defer t.wakeMu.Unlock()
	close(t.finish)
	t.finish = make(chan struct{})
}

// hold enters w among the held claims, waiting for the work header (the
// module's stile-hold) describes.
func (t *tenant) hold(w *waiter, header string) {
	w.hold, w.any = do.Hold{}, false
	if h, ok := do.ParseHold(header); ok {
		w.hold = h
	} else {
		w.any = true
	}
	select {
	case <-w.woken: // a wake of an earlier hold is spent
	default:
	}
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	if _, ok := t.held[w]; !ok {
		t.held[w] = struct{}{}
		t.heldBy[w.token]++
	}
}

// unhold takes w out of the held claims, if it is one.
func (t *tenant) unhold(w *waiter) {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	if _, ok := t.held[w]; !ok {
		return
	}
	delete(t.held, w)
	if t.heldBy[w.token]--; t.heldBy[w.token] <= 0 {
		delete(t.heldBy, w.token)
	}
}

// heldCounts are the claims held for the tenant and for token.
func (t *tenant) heldCounts(token string) (all, mine int) {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	return len(t.held), t.heldBy[token]
}

// wakeHeld signals the held claims that the work header (the module's
// stile-woke) describes may satisfy; without one, every held claim.
func (t *tenant) wakeHeld(header string) {
	woke, targeted := do.ParseHold(header)
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	for w := range t.held {
		if targeted && !w.any && !w.hold.Matches(woke) {
			continue
		}
		select {
		case w.woken <- struct{}{}:
		default:
		}
	}
}

func (m *Manager) setAlarm(t *tenant, at int64) {
	if at == do.AlarmUnchanged || t.alarmAt.Swap(at) == at {
		return
	}
	if err := m.alarms.note(t.name, at); err != nil {
		m.log.Warn("could not persist alarm", "tenant", t.name, "err", err)
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// AlarmAt is the tenant's alarm time in Unix ms (0: none).
func (m *Manager) AlarmAt(name string) int64 { return m.tenant(name).alarmAt.Load() }

// Evict closes tenant's engine if it is open and idle, as the bounds on
// open engines do, and says whether it did; the next request opens a new
// one over the same file. Tests use it to show that what an instance keeps
// in memory is rebuilt from storage.
func (m *Manager) Evict(name string) bool {
	m.mu.Lock()
	t := m.tenants[name]
	m.mu.Unlock()
	if t == nil || !t.mu.TryLock() {
		return false
	}
	defer t.mu.Unlock()
	if t.engine == nil {
		return false
	}
	if err := evictEngine(m.detach(t)); err != nil {
		m.log.Warn("closing a tenant failed", "tenant", name, "err", err)
	}
	m.evictions.Add(1)
	return true
}

// Restarts counts the engines of tenant discarded after a failure.
func (m *Manager) Restarts(name string) int64 { return m.tenant(name).restarts.Load() }

// FireDue runs the alarm of every tenant whose alarm time has come, as
// many tenants at once as there are cores, and returns how many ran once
// all have. A failed alarm is retried with a growing delay, as Durable
// Objects retry theirs.
func (m *Manager) FireDue(ctx context.Context) int {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	var due []*tenant
	for _, t := range m.tenants {
		if at := t.alarmAt.Load(); at > 0 && at <= now {
			due = append(due, t)
		}
	}
	m.mu.Unlock()
	// Tenants' alarms run in parallel, a core each: one tenant's long
	// alarm (a retention slice, a projection catching up) does not hold
	// back the others'.
	sem := make(chan struct{}, max(1, goruntime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for _, t := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := m.Do(ctx, t.name, do.Request{Kind: do.KindAlarm}); err != nil {
				n := t.failures.Add(1)
				retry := now + min(int64(2000)<<min(n-1, 5), 60_000)
				t.alarmAt.Store(retry)
				m.log.Warn("alarm failed; retrying", "tenant", t.name, "attempt", n, "err", err)
				return
			}
			t.failures.Store(0)
		}()
	}
	wg.Wait()
	if len(due) > 0 {
		if err := m.alarms.save(m.alarmSnapshot()); err != nil {
			m.log.Warn("could not persist alarms", "err", err)
		}
	}
	return len(due)
}

func (m *Manager) alarmSnapshot() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.tenants))
	for name, t := range m.tenants {
		if at := t.alarmAt.Load(); at > 0 {
			out[name] = at
		}
	}
	return out
}

// schedule fires alarms on time with the real clock.
func (m *Manager) schedule() {
	defer m.done.Done()
	for {
		next := int64(0)
		for _, at := range m.alarmSnapshot() {
			if next == 0 || at < next {
				next = at
			}
		}
		wait := time.Minute
		if next > 0 {
			wait = min(wait, time.Duration(next-m.cfg.Clock.Now())*time.Millisecond)
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-m.stop:
			timer.Stop()
			return
		case <-m.kick:
			timer.Stop()
			continue
		case <-timer.C:
		}
		m.FireDue(context.Background())
	}
}

// Close stops the scheduler, waits for calls in flight and closes every
// engine.
func (m *Manager) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	close(m.stop)
	m.done.Wait()
	m.mu.Lock()
	ts := make([]*tenant, 0, len(m.tenants))
	for _, t := range m.tenants {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	var errs []error
	for _, t := range ts {
		t.mu.Lock()
		if t.engine != nil {
			errs = append(errs, m.closeEngine(t))
		}
		t.mu.Unlock()
	}
	m.pushes.Wait() // no call is in progress: none can start another
	m.closing.Wait()
	errs = append(errs, m.alarms.save(m.alarmSnapshot()), m.cfg.Factory.Close())
	if m.ownDir {
		errs = append(errs, m.cfg.Directory.Close())
	}
	return errors.Join(errs...)
}

// alarmFile keeps the alarm schedule across restarts of the local host, as
// a Durable Object keeps its alarm. It is rewritten when an alarm moves
// earlier than the file says (so no alarm is ever lost) and after alarms
// fire; a stale, earlier entry only fires an alarm that finds nothing due.
type alarmFile struct {
	path string
	mu   sync.Mutex
	at   map[string]int64
}

// loadAlarms reads the alarm schedule. A missing or unreadable file is
// not an error: lost says so, and the manager asks every tenant for its
// next alarm (a torn file is what a crash or power loss during a write
// leaves where the system does not keep a rename's order).
func loadAlarms(path string) (f *alarmFile, lost string, err error) {
	f = &alarmFile{path: path, at: map[string]int64{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, path + " is missing", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("host: read alarms: %w", err)
	}
	if err := json.Unmarshal(b, &f.at); err != nil {
		f.at = map[string]int64{}
		return f, fmt.Sprintf("%s is unreadable (%v)", path, err), nil
	}
	return f, "", nil
}

func (f *alarmFile) snapshot() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int64, len(f.at))
	for k, v := range f.at {
		out[k] = v
	}
	return out
}

func (f *alarmFile) note(name string, at int64) error {
	f.mu.Lock()
	old, ok := f.at[name]
	if at == 0 || (ok && old > 0 && old <= at) {
		f.mu.Unlock()
		return nil
	}
	f.at[name] = at
	defer f.mu.Unlock()
	return f.write(f.at)
}

func (f *alarmFile) save(at map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = at
	return f.write(at)
}

// forget drops tenant's entry (an erased tenant's), rewriting the file
// if it had one.
func (f *alarmFile) forget(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.at[name]; !ok {
		return nil
	}
	delete(f.at, name)
	return f.write(f.at)
}

// write replaces the file atomically; f.mu is held.
func (f *alarmFile) write(at map[string]int64) error {
	b, err := json.Marshal(at)
	if err != nil {
		return err
	}
	return atomicfile.Write(f.path, b, 0o644)
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

// mayCreate says whether req may create the tenant it names when that does
// not exist (api.MayCreate). The module decides the same again, and a
// request it then refuses for its route or input creates nothing either
// (the stile-absent header).
func (m *Manager) mayCreate(req do.Request) bool {
	if req.Kind != do.KindAPI {
		return false
	}
	_, rest, _ := api.SplitTenantPath(req.Path)
	role := api.Role(req.Headers.Get(do.HeaderPrincipal))
	if role == "" {
		role = api.RoleAdmin // a caller below HTTP, with the host's own authority
	}
	return api.MayCreate(req.Method, rest, role, m.creates)
}

// createSetting is the stile-create header's value: what the module
// decides creation with.
func (m *Manager) createSetting() string {
	if m.creates == "" {
		return api.NoCreation
	}
	return string(m.creates)
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

// notFound is the answer for a tenant that does not exist.
func notFound(name string) do.Response {
	e := api.TenantNotFound(name)
	return do.Response{Status: e.Status, Body: e.AppendJSON(nil), AlarmAt: do.AlarmUnchanged}
}
