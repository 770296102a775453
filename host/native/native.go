package native

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/runtime"
)

// Config configures the native factory.
type Config struct {
	// App is the module's registry: what its main package passes to
	// runtime.Serve.
	App *runtime.App
	// Guest, instead of App, hosts any other handler of request frames:
	// the native twin of a wasip1 module that exports its own entry (the
	// host ABI's contract guest, host/contract). It is called once per
	// instance, so a trap gets a fresh one as under Wasm.
	Guest func(do.Host) Guest
	// Logger receives the module's log lines.
	Logger *slog.Logger
	// Fault, when set, is asked before each tenant statement; true makes
	// that statement panic as a trapping module would. Tests use it to
	// show a trap mid-transaction leaves nothing behind.
	Fault func(tenant, sql string) bool
}

// Guest is what a module's exported entry does (do.Serve's handler): one
// request frame in, one response frame out (valid until the next call).
// runtime.Tenant is one.
type Guest = do.Handler

// Factory opens native engines.
type Factory struct{ cfg Config }

// New returns a factory for app.
func New(cfg Config) (*Factory, error) {
	if (cfg.App == nil) == (cfg.Guest == nil) {
		return nil, errors.New("native: set exactly one of Config.App and Config.Guest")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Factory{cfg: cfg}, nil
}

// Open implements host.Factory.
func (f *Factory) Open(_ context.Context, tenant, path string, clock host.Clock) (host.Engine, error) {
	db, err := dosql.Open(path)
	if err != nil {
		return nil, err
	}
	e := &engine{cfg: &f.cfg, name: tenant, db: db, clock: clock}
	if f.cfg.Guest != nil {
		e.guest = f.cfg.Guest(e)
	} else {
		e.guest = runtime.NewTenant(f.cfg.App, e)
	}
	return e, nil
}

// Close implements host.Factory.
func (f *Factory) Close() error { return nil }

// engine is one tenant: a runtime.Tenant (or Config.Guest) whose do.Host
// is this engine.
type engine struct {
	cfg   *Config
	name  string
	db    *dosql.DB
	clock host.Clock
	guest Guest
}

// trap is the panic value of an injected fault.
type trap struct{ sql string }

// Handle implements host.Engine. A panic anywhere in the module is what a
// trap is under Wasm: the open transaction is rolled back and the engine
// reports host.ErrTrapped, to be discarded.
func (e *engine) Handle(_ context.Context, frame []byte) (out []byte, err error) {
	commits := e.db.Commits()
	defer func() {
		if r := recover(); r != nil {
			// Inside a transaction, the trap rolls back what the call was
			// writing; outside one, after a commit, what it wrote stands.
			lost := !e.db.InTx() && e.db.Commits() != commits
			rbErr := e.db.RollbackAll()
			err = fmt.Errorf("%w: %v (rollback: %v)\n%s", host.ErrTrapped, r, rbErr, debug.Stack())
			if lost {
				err = fmt.Errorf("%w %w", err, host.ErrAnswerLost)
			}
		}
	}()
	resp := e.guest.Handle(frame)
	return append([]byte(nil), resp...), nil
}

// Close implements host.Engine.
func (e *engine) Close() error { return e.db.Close() }

// Rows implements host.Metered.
func (e *engine) Rows() (read, written int64) { return e.db.Rows() }

// Evict implements host.Evictable.
func (e *engine) Evict() error { return e.db.CloseForReopen() }

// Query implements do.Host.
func (e *engine) Query(sql string, params []byte) ([]byte, error) {
	if e.cfg.Fault != nil && e.cfg.Fault(e.name, sql) {
		panic(trap{sql: sql})
	}
	return e.db.Query(sql, params)
}

// Tx implements do.Host: nested calls are savepoints.
func (e *engine) Tx(body func() error) error {
	if err := e.db.Begin(); err != nil {
		return err
	}
	if err := body(); err != nil {
		if rbErr := e.db.Rollback(); rbErr != nil {
			return errors.Join(err, rbErr)
		}
		return err
	}
	if err := e.db.Commit(); err != nil {
		rbErr := e.db.Rollback()
		return errors.Join(do.ErrTxFailed, err, rbErr)
	}
	return nil
}

// Now implements do.Host.
func (e *engine) Now() int64 { return e.clock.Now() }

// Log implements do.Host.
func (e *engine) Log(level do.Level, msg string) {
	e.cfg.Logger.Log(context.Background(), host.LogLevel(level), msg, "tenant", e.name)
}
