package runtime

import (
	"encoding/json"
	"reflect"
	"sort"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/push"
	"github.com/stile-run/stile/schema"
)

// Defaults of a job kind's registration.
const (
	DefaultMaxAttempts = 20
	DefaultLease       = 60 * time.Second
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = time.Hour
	DefaultTimeout     = 30 * time.Minute
)

// JobKind registers one kind of job and its defaults. Enqueue requests may
// override Queue, Priority, MaxAttempts and Lease per job.
type JobKind struct {
	// Name identifies the kind, e.g. "email.send".
	Name string
	// Queue jobs of this kind go to unless the enqueue names one.
	// Default "default".
	Queue string
	// Priority 0 (runs first, the default) to 9 (runs last).
	Priority int
	// MaxAttempts is the retry budget: how many attempts may fail (a handler
	// error or a lapsed lease) before the job is dead. Default 20.
	MaxAttempts int
	// Lease is how long a claim stays valid without a heartbeat. Workers
	// heartbeat at a third of it. Default 60 s.
	Lease time.Duration
	// Timeout is the handler's time limit: the worker cancels its context
	// then, and no lease runs past it (a longer Lease is cut to it;
	// heartbeats extend a shorter one up to it). Default 30 min (or the
	// lease, if longer).
	Timeout time.Duration
	// ConcurrencyKey, if set, makes jobs of this kind count against that
	// concurrency limit unless the enqueue names another.
	ConcurrencyKey string
	// RateKey, if set, makes the starts of this kind's jobs count against
	// that rate limit (App.RateLimit, PUT /v1/t/{tenant}/rates/{key})
	// unless the enqueue names another. A kind may have both keys.
	RateKey string
	// Backoff is the wait before the first retry; it doubles per failure up
	// to MaxBackoff, less up to a quarter of jitter. Defaults 1 s and 1 h.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Validate, if set, checks a job's args at enqueue. An error refuses the
	// enqueue with 400 invalid_args and its message.
	Validate func(args json.RawMessage) error
}

// App is the registry of a tenant module: everything the user's code
// contributes. Build it in init and hand it to Serve.
type App struct {
	kinds        map[string]JobKind
	limits       map[string]int
	rates        map[string]flow.Rate
	txs          map[string]encodedTx
	migrations   []schema.Migration
	aggregates   map[string]aggregate
	reactions    []*reaction // in registration order
	reactionBy   map[string]*reaction
	projections  []*projectionReg
	projectionBy map[string]*projectionReg
	queries      map[string]*queryReg
	pushPolicy   *push.Policy
	// heldTenant and heldToken bound held claims (HeldClaims; 0: the API's).
	heldTenant, heldToken int
	schedules             map[string]moduleSchedule // declared for every tenant
	retention             *api.Retention            // nil: api.DefaultRetention
	storageWarn           int64                     // 0: api.DefaultStorageWarning
	budget                api.Budget                // DailyBudget; zero: none
	// eventTypes and commandTypes are the Go types of registered event
	// and command types (types.go), by type name.
	eventTypes, commandTypes map[string]goType
}

// NewApp returns an empty registry.
func NewApp() *App {
	return &App{kinds: map[string]JobKind{}, limits: map[string]int{}, rates: map[string]flow.Rate{}, txs: map[string]encodedTx{},
		aggregates: map[string]aggregate{}, reactionBy: map[string]*reaction{},
		projectionBy: map[string]*projectionReg{}, queries: map[string]*queryReg{}}
}

// ConcurrencyLimit sets the default limit of a concurrency key: at most
// slots jobs with the key run at once. A tenant may set its own with
// PUT /v1/t/{tenant}/concurrency/{key}; without either, jobs naming the key
// are refused.
func (a *App) ConcurrencyLimit(key string, slots int) *App {
	if !api.ValidName(key) {
		panic(printf.Sprintf("stile: concurrency key %q is invalid: use %s", key, api.NameRule))
	}
	if slots < 0 || slots > api.MaxSlots {
		panic(printf.Sprintf("stile: concurrency key %q: %d slots is outside 0-%d", key, slots, api.MaxSlots))
	}
	a.limits[key] = slots
	return a
}

// RateLimit sets the default rate limit of a key: at most limit jobs with
// the key start in any window of period (a start is a claim, so a retry
// counts again). A tenant may set its own with PUT
// /v1/t/{tenant}/rates/{key}; without either, jobs naming the key are
// refused. Jobs name the key with JobKind.RateKey or the enqueue's
// rate_key.
func (a *App) RateLimit(key string, limit int, period time.Duration) *App {
	if !api.ValidName(key) {
		panic(printf.Sprintf("stile: rate key %q is invalid: use %s", key, api.NameRule))
	}
	r := flow.Rate{Limit: int64(limit), PeriodMs: period.Milliseconds()}
	if p := r.Problem(); p != "" {
		panic(printf.Sprintf("stile: rate key %q: %s", key, p))
	}
	a.rates[key] = r
	return a
}

// HeldClaims bounds the empty long-poll claims (of jobs or deliveries) the
// tenant's host holds at once: perTenant in all, perToken for one token.
// A claim beyond either is answered at once with RetryAfterMs. Zero keeps
// the API's bound (api.MaxHeldClaims, api.MaxHeldClaimsPerToken); a bound
// above it is lowered to it.
func (a *App) HeldClaims(perTenant, perToken int) *App {
	if perTenant < 0 || perToken < 0 {
		panic(printf.Sprintf("stile: held claims %d, %d: bounds are 0 (the default) or more", perTenant, perToken))
	}
	a.heldTenant, a.heldToken = perTenant, perToken
	return a
}

func (a *App) heldClaims() (perTenant, perToken int) {
	perTenant, perToken = api.MaxHeldClaims, api.MaxHeldClaimsPerToken
	if a.heldTenant > 0 {
		perTenant = min(perTenant, a.heldTenant)
	}
	if a.heldToken > 0 {
		perToken = min(perToken, a.heldToken)
	}
	return perTenant, perToken
}

// Limits returns the default concurrency limits.
func (a *App) Limits() map[string]int { return a.limits }

// Rates returns the default rate limits.
func (a *App) Rates() map[string]flow.Rate { return a.rates }

// RegisterJob adds a job kind, filling in defaults. It panics on an invalid
// or duplicate registration: that is a bug in the module, found at start.
func (a *App) RegisterJob(k JobKind) *App {
	if !api.ValidName(k.Name) {
		panic(printf.Sprintf("stile: job kind name %q is invalid: use %s", k.Name, api.NameRule))
	}
	if _, dup := a.kinds[k.Name]; dup {
		panic(printf.Sprintf("stile: job kind %q is registered twice", k.Name))
	}
	if k.Queue == "" {
		k.Queue = api.DefaultQueue
	}
	if !api.ValidName(k.Queue) {
		panic(printf.Sprintf("stile: job kind %q: queue name %q is invalid: use %s", k.Name, k.Queue, api.NameRule))
	}
	if k.Priority < 0 || k.Priority > api.MaxPriority {
		panic(printf.Sprintf("stile: job kind %q: priority %d is outside 0-%d", k.Name, k.Priority, api.MaxPriority))
	}
	if k.MaxAttempts == 0 {
		k.MaxAttempts = DefaultMaxAttempts
	}
	if k.MaxAttempts < 1 || k.MaxAttempts > api.MaxMaxAttempts {
		panic(printf.Sprintf("stile: job kind %q: max attempts %d is outside 1-%d", k.Name, k.MaxAttempts, api.MaxMaxAttempts))
	}
	if k.Lease == 0 {
		k.Lease = DefaultLease
	}
	if k.Lease < api.MinLease || k.Lease > api.MaxLease {
		panic(printf.Sprintf("stile: job kind %q: lease %s is outside %s-%s", k.Name, k.Lease, api.MinLease, api.MaxLease))
	}
	if k.Timeout == 0 {
		k.Timeout = max(DefaultTimeout, k.Lease)
	}
	if k.Timeout < api.MinLease || k.Timeout > api.MaxTimeout {
		panic(printf.Sprintf("stile: job kind %q: timeout %s is outside %s-%s", k.Name, k.Timeout, api.MinLease, api.MaxTimeout))
	}
	if k.ConcurrencyKey != "" && !api.ValidName(k.ConcurrencyKey) {
		panic(printf.Sprintf("stile: job kind %q: concurrency key %q is invalid: use %s", k.Name, k.ConcurrencyKey, api.NameRule))
	}
	if k.RateKey != "" && !api.ValidName(k.RateKey) {
		panic(printf.Sprintf("stile: job kind %q: rate key %q is invalid: use %s", k.Name, k.RateKey, api.NameRule))
	}
	if k.Backoff == 0 {
		k.Backoff = DefaultBackoff
	}
	if k.MaxBackoff == 0 {
		k.MaxBackoff = max(DefaultMaxBackoff, k.Backoff)
	}
	if k.Backoff < time.Millisecond || k.MaxBackoff < k.Backoff {
		panic(printf.Sprintf("stile: job kind %q: backoff %s..%s is invalid", k.Name, k.Backoff, k.MaxBackoff))
	}
	a.kinds[k.Name] = k
	return a
}

// RegisterJobArgs registers the job kind of args type T (api.JobArgs): its
// name is T's Kind, its other settings are k's, as RegisterJob takes them
// (k.Name must be empty or the same). An enqueue's args must decode into a
// T (400 invalid_args, naming what did not fit), then pass T's own
// Validate if T has one (api.ArgsValidator), then k.Validate if set.
// Decoding is encoding/json's: fields T lacks are ignored, so a module
// that reads an older shape of the args takes a newer client's jobs.
func RegisterJobArgs[T api.JobArgs](a *App, k JobKind) *App {
	var zero T
	if reflect.TypeFor[T]().Kind() == reflect.Pointer {
		panic(printf.Sprintf("stile: job args %s: register the value type, not a pointer (null args would be a nil %s)", reflect.TypeFor[T](), reflect.TypeFor[T]()))
	}
	kind := zero.Kind()
	if k.Name != "" && k.Name != kind {
		panic(printf.Sprintf("stile: job kind %q: the %T args name kind %q", k.Name, zero, kind))
	}
	k.Name = kind
	also := k.Validate
	k.Validate = func(args json.RawMessage) error {
		v, err := api.DecodeArgs[T](args)
		if err != nil {
			return err
		}
		if c, ok := any(&v).(api.ArgsValidator); ok { // a Validate of T or of *T
			if err := c.Validate(); err != nil {
				return err
			}
		}
		if also != nil {
			return also(args)
		}
		return nil
	}
	return a.RegisterJob(k)
}

// Kind returns a registered kind.
func (a *App) Kind(name string) (JobKind, bool) {
	k, ok := a.kinds[name]
	return k, ok
}

// Kinds lists the registered kind names, sorted.
func (a *App) Kinds() []string {
	names := make([]string, 0, len(a.kinds))
	for n := range a.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
