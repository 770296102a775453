package wazerohost

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/host/wazerohost/internal/datamerge"
	"github.com/stile-run/stile/host/wazerohost/internal/loopguard"
)

// Config configures the wazero factory.
type Config struct {
	// Wasm is the tenant module (internal/wasmbuild builds it).
	Wasm []byte
	// CacheDir keeps compiled code between runs; "" compiles in memory.
	CacheDir string
	// Logger receives the modules' log lines and stderr.
	Logger *slog.Logger
	// Fault, when set, is asked before each tenant statement; true makes
	// the host function panic, which traps the module mid-call exactly as
	// a guest panic would. Tests use it; nothing of it is in the module.
	Fault func(tenant, sql string) bool
	// Spares is how many instances are kept instantiated and initialized
	// ahead of need, so opening a tenant only attaches its database; they
	// are made in the background after each open. Default 2; negative:
	// none.
	Spares int
	// NoRunawayGuard turns off the runaway-call guard, which stops a call
	// past its context's end (see docs/DESIGN.md, "How a runaway call is
	// stopped"). Without it a spinning guest freezes the process; only
	// benchmarks turn it off, to show what it costs.
	NoRunawayGuard bool
	// Sync is the tenants' databases' synchronous setting (default
	// dosql.SyncNormal).
	Sync dosql.Sync
}

// MemoryLimitPages caps each instance at 128 MiB, a Durable Object's limit.
const MemoryLimitPages = 128 << 20 >> 16

// Factory compiles the module once and instantiates it per tenant.
type Factory struct {
	cfg      Config
	log      *slog.Logger
	guard    string // how runaway calls are stopped: guardLoops, guardContext or ""
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	seq      atomic.Int64
	version  string

	// alloc makes each instance's linear memory; closeImage releases the
	// module data it lays into them, if it does (imageAllocator).
	alloc      experimental.MemoryAllocator
	closeImage func() error
	sharedData bool

	spares    chan *engine // initialized instances no tenant has yet
	refilling atomic.Bool
	closed    atomic.Bool
	bg        sync.WaitGroup // the refill in progress
	bgMu      sync.Mutex     // orders a refill's start against Close
}

// ModuleVersion implements host.Versioned: a hash of the module's bytes.
func (f *Factory) ModuleVersion() string { return f.version }

type ctxKey struct{}

// New compiles cfg.Wasm and checks that it imports only what hosts provide.
func New(ctx context.Context, cfg Config) (*Factory, error) {
	if len(cfg.Wasm) == 0 {
		return nil, errors.New("wazerohost: Config.Wasm is empty")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// Go's linker writes tens of thousands of data segments, each applied
	// on every instantiation. Where it can, the factory lays the data into
	// each new memory itself, copy-on-write from one image
	// (imageAllocator); elsewhere the segments are merged into a few.
	alloc, closeImage := memoryAllocator, func() error { return nil }
	wasm, lo, image, err := datamerge.Split(cfg.Wasm)
	imaged := false
	if err == nil && len(image) > 0 {
		if a, c, err := imageAllocator(lo, image); err == nil {
			alloc, closeImage, imaged = a, c, true
		} else {
			cfg.Logger.Debug("module data is copied into each instance", "err", err)
		}
	}
	if !imaged {
		if wasm, err = datamerge.Merge(cfg.Wasm); err != nil {
			if !errors.Is(err, datamerge.ErrUnsupported) {
				return nil, fmt.Errorf("wazerohost: %w", err)
			}
			wasm = cfg.Wasm
		}
	}
	guard := ""
	if !cfg.NoRunawayGuard {
		if guarded, err := loopguard.Instrument(wasm, do.ImportModule, do.ImportNow); err == nil {
			wasm, guard = guarded, guardLoops
		} else {
			// wazero's own guard: correct, and several times slower.
			cfg.Logger.Warn("the runaway guard falls back to wazero's close-on-context-done", "err", err)
			guard = guardContext
		}
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(guard == guardContext).
		WithMemoryLimitPages(MemoryLimitPages)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wazerohost: compilation cache %s: %w", cfg.CacheDir, err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (*Factory, error) {
		rt.Close(ctx)
		closeImage()
		return nil, err
	}
	if cfg.Spares == 0 {
		cfg.Spares = 2
	}
	f := &Factory{cfg: cfg, log: cfg.Logger, rt: rt, guard: guard, version: host.ModuleVersion(cfg.Wasm),
		spares: make(chan *engine, max(cfg.Spares, 0)), alloc: alloc, closeImage: closeImage, sharedData: imaged}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("wazerohost: instantiate WASI: %w", err))
	}
	if err := f.instantiateImports(ctx); err != nil {
		return fail(err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return fail(fmt.Errorf("wazerohost: compile tenant module: %w", err))
	}
	if err := CheckImports(compiled); err != nil {
		return fail(err)
	}
	for _, name := range []string{"_initialize", do.ExportBuffer, do.ExportHandle, do.ExportTxBody} {
		if _, ok := compiled.ExportedFunctions()[name]; !ok {
			return fail(fmt.Errorf("wazerohost: the module does not export %s: build it with -buildmode=c-shared from a package that imports github.com/stile-run/stile/runtime", name))
		}
	}
	f.compiled = compiled
	return f, nil
}

// The ways a runaway call is stopped.
const (
	// guardLoops: the module is rewritten (internal/loopguard) to call
	// ImportNow every loopguard.Interval loop headers, and hostNow panics
	// once the call's context has ended.
	guardLoops = "loops"
	// guardContext: wazero checks the context at every loop header, in Go.
	guardContext = "context"
)

// SharedData says whether the module's data is laid into each instance's
// memory copy-on-write from one image (Linux), rather than copied by its
// data segments.
func (f *Factory) SharedData() bool { return f.sharedData }

// RunawayGuard says how this factory stops a call past its context's end:
// "loops", "context" (wazero's fallback, for a module the rewriter cannot
// read) or "" (turned off).
func (f *Factory) RunawayGuard() string { return f.guard }

// Imports lists the host functions of package do's ABI, by name.
var Imports = []string{do.ImportSQL, do.ImportTake, do.ImportTx, do.ImportNow, do.ImportLog}

// CheckImports refuses a module that imports anything besides WASI and
// the ABI's host functions.
func CheckImports(m wazero.CompiledModule) error {
	known := map[string]bool{}
	for _, n := range Imports {
		known[n] = true
	}
	for _, fn := range m.ImportedFunctions() {
		mod, name, _ := fn.Import()
		switch {
		case mod == wasi_snapshot_preview1.ModuleName:
		case mod == do.ImportModule && known[name]:
		default:
			return fmt.Errorf("wazerohost: the module imports %s.%s, which no Stile host provides", mod, name)
		}
	}
	return nil
}

func (f *Factory) instantiateImports(ctx context.Context) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := f.rt.NewHostModuleBuilder(do.ImportModule)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostSQL),
		[]api.ValueType{i32, i32, i32, i32, i32, i32}, []api.ValueType{i64}).Export(do.ImportSQL)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostTake),
		[]api.ValueType{i32}, nil).Export(do.ImportTake)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostTx),
		[]api.ValueType{i32}, []api.ValueType{i64}).Export(do.ImportTx)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostNow),
		nil, []api.ValueType{i64}).Export(do.ImportNow)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostLog),
		[]api.ValueType{i32, i32, i32}, nil).Export(do.ImportLog)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("wazerohost: instantiate host functions: %w", err)
	}
	return nil
}

// Close implements host.Factory.
func (f *Factory) Close() error {
	f.bgMu.Lock()
	f.closed.Store(true)
	f.bgMu.Unlock()
	f.bg.Wait()
	for {
		select {
		case e := <-f.spares:
			e.mod.Close(context.Background())
			continue
		default:
		}
		return errors.Join(f.rt.Close(context.Background()), f.closeImage())
	}
}

// Open implements host.Factory: an instance over the tenant's file, a
// spare one if there is one.
func (f *Factory) Open(ctx context.Context, tenant, path string, clock host.Clock) (host.Engine, error) {
	db, err := dosql.OpenSync(path, f.cfg.Sync)
	if err != nil {
		return nil, err
	}
	var e *engine
	select {
	case e = <-f.spares:
	default:
		if e, err = f.instantiate(ctx); err != nil {
			db.Close()
			return nil, err
		}
	}
	e.name, e.db, e.clock = tenant, db, clock
	e.stderr.named(tenant)
	f.refill()
	return e, nil
}

// initTimeout bounds a module's start, as CallTimeout bounds a call.
const initTimeout = 30 * time.Second

// instantiate makes an instance with no tenant yet and initializes it. A
// module's start may not touch storage: it has no tenant yet.
func (f *Factory) instantiate(ctx context.Context) (*engine, error) {
	e := &engine{f: f, clock: host.RealClock{}, stderr: &lineLog{log: f.log}}
	ictx := context.WithValue(ctx, ctxKey{}, e)
	mod, err := f.rt.InstantiateModule(experimental.WithMemoryAllocator(ictx, f.alloc), f.compiled, wazero.NewModuleConfig().
		WithName(fmt.Sprintf("instance-%d", f.seq.Add(1))).
		WithStartFunctions(). // a reactor: _initialize is called below
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStdout(e.stderr).WithStderr(e.stderr))
	if err != nil {
		return nil, fmt.Errorf("instantiate tenant module: %w", err)
	}
	e.mod = mod
	e.buffer = mod.ExportedFunction(do.ExportBuffer)
	e.handle = mod.ExportedFunction(do.ExportHandle)
	// A start that spins is stopped as a call is (the guard's deadline).
	ictx, cancel := context.WithTimeout(ictx, initTimeout)
	defer cancel()
	if _, err := mod.ExportedFunction("_initialize").Call(ictx); err != nil {
		mod.Close(context.Background())
		return nil, fmt.Errorf("initialize tenant module: %w%s", err, e.stderr.tail())
	}
	return e, nil
}

// refill makes spares in the background until there are Config.Spares.
func (f *Factory) refill() {
	// Under bgMu, so Close cannot begin waiting between the check of
	// closed and the Add.
	f.bgMu.Lock()
	defer f.bgMu.Unlock()
	if cap(f.spares) == 0 || f.closed.Load() || !f.refilling.CompareAndSwap(false, true) {
		return
	}
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		failed := false
		defer func() {
			f.refilling.Store(false)
			if !failed && len(f.spares) < cap(f.spares) {
				f.refill() // an open took one as this refill ended
			}
		}()
		for len(f.spares) < cap(f.spares) && !f.closed.Load() {
			e, err := f.instantiate(context.Background())
			if err != nil {
				failed = true
				f.log.Warn("could not make a spare instance", "err", err)
				return
			}
			select {
			case f.spares <- e:
			default:
				e.mod.Close(context.Background())
				return
			}
		}
	}()
}

// engine is one tenant's instance.
type engine struct {
	f      *Factory
	name   string
	db     *dosql.DB
	clock  host.Clock
	mod    api.Module
	buffer api.Function
	handle api.Function
	// txBodies holds one stile_tx_body function per nesting depth: a
	// wazero function must not be called again while it runs (its call
	// engine holds the running call's stack), and a nested transaction
	// calls stile_tx_body from inside stile_tx_body.
	txBodies []api.Function
	txDepth  int
	stderr   *lineLog
	pending  []byte // an ImportSQL/ImportTx payload too large for the guest's buffer
	stack    [2]uint64
	// deadline is the running call's context deadline in Unix nanoseconds
	// (0: none); hostNow stops the call once it has passed.
	deadline int64
}

// errRunaway is the panic value that stops a call past its deadline.
var errRunaway = errors.New("the call ran past its deadline (a Durable Object's CPU limit) and was stopped")

// stopIfOver panics with errRunaway when the running call's context has
// ended. It runs in hostNow: every loopguard.Interval loop headers and at
// each clock read.
func (e *engine) stopIfOver(ctx context.Context) {
	if e.deadline != 0 && time.Now().UnixNano() > e.deadline || ctx.Err() != nil {
		panic(errRunaway)
	}
}

// Handle implements host.Engine.
func (e *engine) Handle(ctx context.Context, frame []byte) (out []byte, err error) {
	ctx = context.WithValue(ctx, ctxKey{}, e)
	e.deadline = 0
	if dl, ok := ctx.Deadline(); ok {
		e.deadline = dl.UnixNano()
	}
	commits := e.db.Commits()
	defer func() {
		if err != nil {
			// Inside a transaction, the trap rolls back what the call was
			// writing; outside one, after a commit, what it wrote stands.
			lost := !e.db.InTx() && e.db.Commits() != commits
			rbErr := e.db.RollbackAll()
			err = fmt.Errorf("%w: %v%s (rollback: %v)", host.ErrTrapped, err, e.stderr.tail(), rbErr)
			if lost {
				err = fmt.Errorf("%w %w", err, host.ErrAnswerLost)
			}
		}
	}()
	e.stack[0] = uint64(len(frame))
	if err := e.buffer.CallWithStack(ctx, e.stack[:]); err != nil {
		return nil, err
	}
	ptr := api.DecodeU32(e.stack[0])
	if !e.mod.Memory().Write(ptr, frame) {
		return nil, fmt.Errorf("request buffer at %d is out of range", ptr)
	}
	e.stack[0] = uint64(len(frame))
	if err := e.handle.CallWithStack(ctx, e.stack[:]); err != nil {
		return nil, err
	}
	res := e.stack[0]
	rptr, rlen := uint32(res>>32), api.DecodeU32(res)
	b, ok := e.mod.Memory().Read(rptr, rlen)
	if !ok {
		return nil, fmt.Errorf("response at %d+%d is out of range", rptr, rlen)
	}
	return bytes.Clone(b), nil
}

// Rows implements host.Metered.
func (e *engine) Rows() (read, written int64) { return e.db.Rows() }

// MemoryBytes implements host.Sized: the guest's linear memory and what
// its database's connection holds.
func (e *engine) MemoryBytes() int64 {
	return int64(e.mod.Memory().Size()) + e.db.MemoryBytes()
}

// Close implements host.Engine.
func (e *engine) Close() error { return e.close(e.db.Close) }

// Evict implements host.Evictable.
func (e *engine) Evict() error { return e.close(e.db.CloseForReopen) }

func (e *engine) close(closeDB func() error) error {
	var errs []error
	if e.mod != nil {
		errs = append(errs, e.mod.Close(context.Background()))
	}
	return errors.Join(append(errs, closeDB())...)
}

func engineOf(ctx context.Context) *engine {
	e, _ := ctx.Value(ctxKey{}).(*engine)
	if e == nil {
		panic("wazerohost: host function called outside a tenant call")
	}
	return e
}

// withDB is e, once it serves a tenant: a module's start (package inits)
// runs before, and may not use storage.
func (e *engine) withDB(fn string) *engine {
	if e.db == nil {
		panic(fn + " called while the module starts (a package init): storage is reachable only from requests")
	}
	return e
}

// payload hands a result to the guest: written into its buffer when it
// fits, else kept pending for ImportTake. n is the payload's length,
// negated minus one for an error.
func (e *engine) payload(mem api.Memory, outPtr, outCap uint32, b []byte, isErr bool) int64 {
	if uint32(len(b)) <= outCap {
		mem.Write(outPtr, b)
		e.pending = nil
	} else {
		e.pending = append(e.pending[:0], b...)
	}
	if isErr {
		return -int64(len(b)) - 1
	}
	return int64(len(b))
}

// faultTrap is the panic value of an injected fault.
type faultTrap struct{ sql string }

func (t faultTrap) String() string { return "injected fault at: " + t.sql }

func hostSQL(ctx context.Context, mod api.Module, stack []uint64) {
	e := engineOf(ctx).withDB("stile.sql")
	mem := mod.Memory()
	sqlB, ok1 := mem.Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	params, ok2 := mem.Read(api.DecodeU32(stack[2]), api.DecodeU32(stack[3]))
	if !ok1 || !ok2 {
		panic("stile.sql: arguments out of range")
	}
	// A view of guest memory, valid during this call; dosql copies what it
	// keeps.
	sql := unsafe.String(unsafe.SliceData(sqlB), len(sqlB))
	if e.f.cfg.Fault != nil && e.f.cfg.Fault(e.name, sql) {
		panic(faultTrap{sql: strings.Clone(sql)})
	}
	out, err := e.db.Query(sql, params)
	outPtr, outCap := api.DecodeU32(stack[4]), api.DecodeU32(stack[5])
	if err != nil {
		stack[0] = api.EncodeI64(e.payload(mem, outPtr, outCap, []byte(err.Error()), true))
		return
	}
	stack[0] = api.EncodeI64(e.payload(mem, outPtr, outCap, out, false))
}

func hostTake(ctx context.Context, mod api.Module, stack []uint64) {
	e := engineOf(ctx)
	if !mod.Memory().Write(api.DecodeU32(stack[0]), e.pending) {
		panic("stile.take: buffer out of range")
	}
	e.pending = e.pending[:0]
}

func hostTx(ctx context.Context, mod api.Module, stack []uint64) {
	e := engineOf(ctx).withDB("stile.tx")
	id := api.DecodeU32(stack[0])
	fail := func(err error) {
		msg := []byte(err.Error())
		e.pending = append(e.pending[:0], msg...)
		stack[0] = api.EncodeI64(-int64(len(msg)) - 1)
	}
	if err := e.db.Begin(); err != nil {
		fail(err)
		return
	}
	body := []uint64{uint64(id)}
	if e.txDepth == len(e.txBodies) {
		e.txBodies = append(e.txBodies, mod.ExportedFunction(do.ExportTxBody))
	}
	fn := e.txBodies[e.txDepth]
	e.txDepth++
	err := fn.CallWithStack(ctx, body)
	e.txDepth--
	if err != nil {
		// The guest trapped inside the body. Never return into it: unwind
		// the whole call, and let Handle roll back and discard it.
		panic(fmt.Errorf("transaction body: %w", err))
	}
	if api.DecodeU32(body[0]) != do.TxCommit {
		if err := e.db.Rollback(); err != nil {
			fail(err)
			return
		}
		stack[0] = api.EncodeI64(do.TxRolledBack)
		return
	}
	if err := e.db.Commit(); err != nil {
		e.db.Rollback()
		fail(err)
		return
	}
	stack[0] = api.EncodeI64(do.TxCommitted)
}

func hostNow(ctx context.Context, _ api.Module, stack []uint64) {
	e := engineOf(ctx)
	if e.f.guard == guardLoops {
		e.stopIfOver(ctx)
	}
	stack[0] = api.EncodeI64(e.clock.Now())
}

func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	e := engineOf(ctx)
	msg, ok := mod.Memory().Read(api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	if !ok {
		panic("stile.log: message out of range")
	}
	e.f.log.Log(ctx, host.LogLevel(do.Level(api.DecodeI32(stack[0]))), string(msg), "tenant", e.name)
}

// lineLog forwards a module's stdout and stderr to the log and remembers the
// last lines, so a trap's error can quote the panic message that preceded it.
type lineLog struct {
	log    *slog.Logger
	mu     sync.Mutex
	tenant string
	buf    []byte
	last   []string
}

var _ io.Writer = (*lineLog)(nil)

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		l.log.Warn(line, "tenant", l.tenant, "stream", "module")
		l.last = append(l.last, line)
		if len(l.last) > 3 {
			l.last = l.last[1:]
		}
	}
	return len(p), nil
}

// named sets the tenant the lines are logged for.
func (l *lineLog) named(tenant string) {
	l.mu.Lock()
	l.tenant = tenant
	l.mu.Unlock()
}

// tail quotes the module's last output lines, if any.
func (l *lineLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 0 {
		return ""
	}
	s := " [module said: " + strings.Join(l.last, " | ") + "]"
	l.last = nil
	return s
}
