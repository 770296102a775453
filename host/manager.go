package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/directory"
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

// Manager runs tenants: one engine each, calls serialized per tenant,
// alarms scheduled from committed state, claims held open by the host.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	creates api.Role // cfg.CreateRole parsed ("": none)
	ownDir  bool     // the directory was opened here, and is closed with the manager

	// mu guards the tenants seen and the count of calls that orders their
	// uses (for eviction, least recently used first). Each tenant's own
	// state has its own locks (tenant.go).
	mu struct {
		sync.Mutex
		tenants map[string]*tenant
		uses    int64
	}
	engines engines        // the open engines, counted for the bounds (engines.go)
	alarms  alarmSchedule  // the tenants' alarms, kept and fired (alarms.go)
	pushes  sync.WaitGroup // pushes being delivered (pushes.go)

	stop   chan struct{}  // closed by Close: background work and held claims end
	done   sync.WaitGroup // the background goroutines (alarms, the records' rebuild)
	closed atomic.Bool
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
	m := &Manager{cfg: cfg, log: cfg.Logger, creates: creates, ownDir: ownDir, stop: make(chan struct{}),
		alarms: alarmSchedule{file: alarms, kick: make(chan struct{}, 1)}}
	m.mu.tenants = map[string]*tenant{}
	// Alarms survive a restart: tenants that had one get it back.
	for name, at := range m.alarms.file.snapshot() {
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
		m.done.Go(func() { m.rebuild(names, alarmsLost != "", dirLost != "") })
	}
	if cfg.ScheduleAlarms {
		m.done.Go(m.schedule)
	}
	return m, nil
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
	return m.do(ctx, name, req, true)
}

// Inspect is Do for the host's own calls (a metrics scrape, a status read
// at start, the end of a push it could not deliver): the tenant's usage
// counts their rows and time, not a request of the tenant's.
func (m *Manager) Inspect(ctx context.Context, name string, req do.Request) (do.Response, error) {
	return m.do(ctx, name, req, false)
}

func (m *Manager) do(ctx context.Context, name string, req do.Request, counted bool) (do.Response, error) {
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
	switch {
	case req.Kind == do.KindAlarm:
		t.use.alarms.Add(1)
	case counted:
		t.use.requests.Add(1)
	}
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
	return m.callHeld(ctx, t, req, creates)
}

// flushUsage asks the module of e, tenant name's engine about to close,
// to record the usage it has not: what its instance counted is lost with
// it (the pushes it sent, and since when its count waits), and the
// manager's count of the tenant too when the manager is closing. count is
// that count, as stile-usage carries it with the mode "flush". The call
// reads the tenant's usage, and records in its transaction; a failure is
// logged, never fatal to the close.
func (m *Manager) flushUsage(e Engine, name string, count do.Header) {
	req := do.Request{Kind: do.KindAPI, Method: api.RouteUsage.Method, Path: api.RouteUsage.Path(name),
		Headers: do.Headers{{Name: do.HeaderTenant, Value: name}, {Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}, count}}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CallTimeout)
	defer cancel()
	out, err := e.Handle(ctx, do.AppendRequest(nil, req))
	if err == nil {
		var resp do.Response
		if resp, err = do.DecodeResponse(out); err == nil && resp.Status >= 500 {
			err = fmt.Errorf("status %d: %s", resp.Status, resp.Body)
		}
		if n := resp.Headers.Get(do.HeaderDirectory); err == nil && n != "" && m.cfg.Directory != nil {
			m.note(name, n) // what it recorded, for the fleet's view
		}
	}
	if err != nil {
		m.log.Warn("could not record the tenant's usage before closing it", "tenant", name, "err", err)
	}
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
	t.holds.unhold(w)
	req.Headers = append(slices.Clone(req.Headers), t.use.header("keep"))
	if t.watchers.any() {
		req.Headers = append(req.Headers, do.Header{Name: do.HeaderWatched, Value: "1"})
	}
	if all, mine := t.holds.counts(w.token); all > 0 {
		req.Headers = append(req.Headers, do.Header{Name: do.HeaderHeld, Value: do.HeldCounts(all, mine)})
	}
	frame := do.AppendRequest(nil, req)
	if t.engine == nil {
		// Opened whatever the caller does next, as the call is (below).
		if err := m.open(context.WithoutCancel(ctx), t); err != nil {
			return do.Response{}, err
		}
	}
	m.mu.Lock()
	m.mu.uses++
	t.lastUse = m.mu.uses
	m.mu.Unlock()

	// A call runs to its end once started, whatever its caller does: a
	// client that half-closes its connection (or leaves) cancels the
	// request's context, and stopping the module there would discard an
	// instance that did nothing wrong. Only the call's own deadline (the
	// Durable Object's CPU limit) stops it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CallTimeout)
	metered, _ := t.engine.(Metered)
	var read0, written0 int64
	if metered != nil {
		read0, written0 = metered.Rows()
	}
	began := time.Now()
	out, err := t.engine.Handle(cctx, frame)
	t.use.micros.Add(time.Since(began).Microseconds())
	if metered != nil {
		read1, written1 := metered.Rows()
		t.use.read.Add(read1 - read0)
		t.use.written.Add(written1 - written0)
	}
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
	if m.cfg.MaxMemory > 0 && m.measure(t) && m.engines.memory.Load() > m.cfg.MaxMemory {
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
	t.changed(resp)
	if resp.Flags&do.FlagWake != 0 {
		t.holds.wake(resp.Headers.Get(do.HeaderWoke))
	}
	if resp.Flags&do.FlagFinished != 0 {
		t.holds.finished()
	}
	if resp.HoldMs > 0 && resp.Flags&do.FlagHoldFinished == 0 {
		t.holds.hold(w, resp.Headers.Get(do.HeaderHold))
	}
	if n := resp.Headers.Get(do.HeaderDirectory); n != "" {
		if m.cfg.Directory != nil {
			m.note(t.name, n)
		}
		if note, err := api.DecodeDirectoryNote([]byte(n)); err == nil && note.Erased {
			m.scrub(t)
		}
	}
	if f := resp.Headers.Get(do.HeaderFailing); f != "" && m.cfg.Directory != nil {
		m.noteFailing(t.name, f)
	}
	if p := resp.Headers.Get(do.HeaderPush); p != "" && m.cfg.Pusher != nil {
		m.pushes.Go(func() { m.deliver(t.name, p) })
	}
	return resp, nil
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

// notFound is the answer for a tenant that does not exist.
func notFound(name string) do.Response {
	e := api.TenantNotFound(name)
	return do.Response{Status: e.Status, Body: e.AppendJSON(nil), AlarmAt: do.AlarmUnchanged}
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
	ts := make([]*tenant, 0, len(m.mu.tenants))
	for _, t := range m.mu.tenants {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	var errs []error
	for _, t := range ts {
		t.mu.Lock()
		if t.engine != nil {
			m.flushUsage(t.engine, t.name, t.use.header("flush"))
			errs = append(errs, m.closeEngine(t))
		}
		t.mu.Unlock()
	}
	m.pushes.Wait() // no call is in progress: none can start another
	m.engines.closing.Wait()
	errs = append(errs, m.alarms.file.save(m.alarmSnapshot), m.cfg.Factory.Close())
	if m.ownDir {
		errs = append(errs, m.cfg.Directory.Close())
	}
	return errors.Join(errs...)
}
