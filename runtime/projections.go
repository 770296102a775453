package runtime

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/ascii"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/projection"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

// Projection defaults and bounds.
const (
	DefaultProjectionBatch = 100
	MaxProjectionBatch     = 1000
)

// Projection registers a read model: tables of its own, filled by Handle
// from events of the given types, a batch of events per storage
// transaction, exactly once per batch.
type Projection struct {
	// Name: 1-32 characters of a-z, 0-9 and _, starting with a letter.
	Name   string
	Events []string
	// Tables defines the projection's tables and indexes, naming each as
	// a placeholder: CREATE TABLE {orders} (...), CREATE INDEX
	// {orders_by_day} ON {orders} (day).
	Tables []string
	// Handle applies one event. It reads and writes the projection's own
	// tables only, through tx; an error (or a panic) rolls back the batch,
	// commits the events before this one on their own, and retries this
	// one after the backoff, never skipping it.
	Handle func(tx *ProjectionTx, e api.Event) error
	// Batch is how many events one transaction applies (default 100, at
	// most 1000).
	Batch int
	// Version: change it (or the tables, or the event types) and the next
	// deploy rebuilds the projection into a new generation, swapped in when
	// it reaches the head of the log.
	Version int
	// Backoff before retrying a failed event, doubling up to MaxBackoff.
	// Defaults 1 s and 5 min.
	Backoff, MaxBackoff time.Duration
}

// Query registers a named read-only query of a projection's live tables,
// served at GET /v1/t/{tenant}/queries/{name}?param=… .
type Query struct {
	Name       string
	Projection string
	// SQL is a SELECT naming the projection's tables as placeholders, with
	// one ? per entry of Params, in order.
	SQL string
	// Params name the URL parameters bound to the ?s, as text (compare with
	// a column to get its type, or CAST).
	Params []string
	// Columns name the result's columns, in order: each row is answered as
	// an object with these keys.
	Columns []string
	// MaxRows bounds the answer (default 100, at most 1000).
	MaxRows int
}

// projectionReg is a registered projection.
type projectionReg struct {
	Projection
	logical     []string // its table and index names
	fingerprint string
	backoff     fence.Backoff
}

type queryReg struct{ Query }

// RegisterProjection adds a projection. It panics on an invalid or
// duplicate registration, or on tables it cannot own.
func (a *App) RegisterProjection(p Projection) *App {
	if !projection.ValidName(p.Name) {
		panic(printf.Sprintf("stile: projection name %q is invalid: use %s", p.Name, projection.NameRule))
	}
	if _, dup := a.projectionBy[p.Name]; dup {
		panic(printf.Sprintf("stile: projection %q is registered twice", p.Name))
	}
	for _, other := range a.projections {
		if projection.MayCollide(p.Name, other.Name) {
			panic(printf.Sprintf("stile: projections %q and %q could name the same tables: rename one", p.Name, other.Name))
		}
	}
	if p.Handle == nil || len(p.Events) == 0 || len(p.Tables) == 0 {
		panic(printf.Sprintf("stile: projection %q needs Events, Tables and Handle", p.Name))
	}
	for i, t := range p.Events {
		if !api.ValidName(t) || slices.Contains(p.Events[:i], t) {
			// Twice would read each event twice, and apply it twice.
			panic(printf.Sprintf("stile: projection %q: event type %q is invalid or listed twice", p.Name, t))
		}
	}
	if p.Batch == 0 {
		p.Batch = DefaultProjectionBatch
	}
	if p.Batch < 1 || p.Batch > MaxProjectionBatch {
		panic(printf.Sprintf("stile: projection %q: batch %d is outside 1-%d", p.Name, p.Batch, MaxProjectionBatch))
	}
	if p.Backoff == 0 {
		p.Backoff = DefaultBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(5*time.Minute, p.Backoff)
	}
	if p.Backoff < time.Millisecond || p.MaxBackoff < p.Backoff {
		panic(printf.Sprintf("stile: projection %q: backoff %s..%s is invalid", p.Name, p.Backoff, p.MaxBackoff))
	}
	r := &projectionReg{Projection: p, backoff: fence.Backoff{BaseMs: p.Backoff.Milliseconds(), MaxMs: p.MaxBackoff.Milliseconds()}}
	for _, sql := range p.Tables {
		name, err := definedName(sql)
		if err != nil {
			panic(printf.Sprintf("stile: projection %q: %v", p.Name, err))
		}
		r.logical = append(r.logical, name)
	}
	names := r.names(1)
	for _, sql := range p.Tables {
		if _, err := projection.Check(sql, projection.Schema, names); err != nil {
			panic(printf.Sprintf("stile: projection %q: %s: %v", p.Name, sql, err))
		}
	}
	h := fnv.New128a()
	for _, part := range append(append([]string{strconv.Itoa(p.Version)}, p.Events...), p.Tables...) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	r.fingerprint = hex.EncodeToString(h.Sum(nil))
	a.projections = append(a.projections, r)
	a.projectionBy[p.Name] = r
	return a
}

// definedName is the placeholder a CREATE TABLE or CREATE INDEX defines.
func definedName(sql string) (string, error) {
	open := strings.IndexByte(sql, '{')
	end := strings.IndexByte(sql, '}')
	if open < 0 || end < open {
		return "", printf.Errorf("%q defines no {table} or {index}", sql)
	}
	name := sql[open+1 : end]
	if !projection.ValidName(name) {
		return "", printf.Errorf("{%s} is not a valid name: use %s", name, projection.NameRule)
	}
	return name, nil
}

// names maps the projection's logical names to generation gen's tables.
func (r *projectionReg) names(gen int64) map[string]string {
	m := make(map[string]string, len(r.logical))
	for _, n := range r.logical {
		m[n] = projection.Physical(r.Name, gen, n)
	}
	return m
}

// RegisterQuery adds a named query. It panics on an invalid one.
func (a *App) RegisterQuery(q Query) *App {
	if !api.ValidName(q.Name) {
		panic(printf.Sprintf("stile: query name %q is invalid: use %s", q.Name, api.NameRule))
	}
	if _, dup := a.queries[q.Name]; dup {
		panic(printf.Sprintf("stile: query %q is registered twice", q.Name))
	}
	p, ok := a.projectionBy[q.Projection]
	if !ok {
		panic(printf.Sprintf("stile: query %q: register projection %q first", q.Name, q.Projection))
	}
	if _, err := projection.Check(q.SQL, projection.Read, p.names(1)); err != nil {
		panic(printf.Sprintf("stile: query %q: %v", q.Name, err))
	}
	if slices.Contains(q.Params, api.MinSeqParam) {
		panic(printf.Sprintf("stile: query %q: a parameter may not be named %s (the query's freshness)", q.Name, api.MinSeqParam))
	}
	if strings.Count(q.SQL, "?") != len(q.Params) || len(q.Columns) == 0 {
		panic(printf.Sprintf("stile: query %q: give one ? per param (%d params) and name its columns", q.Name, len(q.Params)))
	}
	if q.MaxRows == 0 {
		q.MaxRows = 100
	}
	if q.MaxRows < 1 || q.MaxRows > 1000 {
		panic(printf.Sprintf("stile: query %q: max rows %d is outside 1-1000", q.Name, q.MaxRows))
	}
	a.queries[q.Name] = &queryReg{Query: q}
	return a
}

// ProjectionTx is a projection handler's view of storage: its own tables,
// named as placeholders, in the generation being built.
type ProjectionTx struct {
	t     *Tenant
	p     *projectionReg
	gen   int64
	names map[string]string
	sql   map[string]string // checked statements, by their text
	// lastSQL is the statement checked last, lastChecked its checked text.
	lastSQL, lastChecked string
	now                  int64
}

// Exec runs a statement on the projection's tables.
func (tx *ProjectionTx) Exec(sql string, args ...any) error {
	s, err := tx.check(sql)
	if err != nil {
		return err
	}
	return tx.t.db.Exec(s, args...)
}

// Query runs a SELECT on the projection's tables. The rows are valid until
// the next statement.
func (tx *ProjectionTx) Query(sql string, args ...any) (*do.Rows, error) {
	s, err := tx.check(sql)
	if err != nil {
		return nil, err
	}
	return tx.t.db.Query(s, args...)
}

// Now is the batch's time (the host's clock).
func (tx *ProjectionTx) Now() time.Time { return ts(tx.now) }

// Generation is the generation being built (a rebuild builds a new one).
func (tx *ProjectionTx) Generation() int64 { return tx.gen }

func (tx *ProjectionTx) check(sql string) (string, error) {
	// A handler passes the same constant again and again: comparing it
	// with the last one is a pointer comparison, where the map lookup
	// hashes the whole text (byte loops, slow under Wasm).
	if sql == tx.lastSQL && sql != "" {
		return tx.lastChecked, nil
	}
	if s, ok := tx.sql[sql]; ok {
		tx.lastSQL, tx.lastChecked = sql, s
		return s, nil
	}
	s, err := projection.Check(sql, projection.Write, tx.names)
	if err != nil {
		return "", printf.Errorf("projection %s: %w", tx.p.Name, err)
	}
	if len(tx.sql) < 1024 {
		tx.sql[sql] = s
	}
	return s, nil
}

// projectionTx returns the (reused) view of generation gen of p.
func (t *Tenant) projectionTx(p *projectionReg, gen, now int64) *ProjectionTx {
	key := p.Name + "/" + strconv.FormatInt(gen, 10)
	tx, ok := t.proj.tx[key]
	if !ok {
		tx = &ProjectionTx{t: t, p: p, gen: gen, names: p.names(gen), sql: map[string]string{}}
		t.proj.tx[key] = tx
	}
	tx.now = now
	return tx
}

// ---- generations ----

// syncProjections gives every registered projection a live generation,
// and starts a rebuild for one whose definition changed.
func (t *Tenant) syncProjections(now int64) error {
	if len(t.app.projections) == 0 {
		return nil
	}
	gens, err := t.projections.All()
	if err != nil {
		return err
	}
	changed := false
	for _, p := range t.app.projections {
		var live, building *projectionstore.Generation
		for i := range gens {
			if gens[i].Name == p.Name {
				if gens[i].Role == projectionstore.Live {
					live = &gens[i]
				} else {
					building = &gens[i]
				}
			}
		}
		switch {
		case live == nil:
			if err := t.createGeneration(now, p, projectionstore.Live); err != nil {
				return err
			}
			changed = true
		case live.Fingerprint == p.fingerprint:
			// A rebuild of another definition is pointless now (a deploy
			// rolled back); one of this definition was asked for: it goes on.
			if building != nil && building.Fingerprint != p.fingerprint {
				if err := t.dropGeneration(p, building.Generation); err != nil {
					return err
				}
				changed = true
			}
		case building == nil || building.Fingerprint != p.fingerprint:
			if building != nil {
				if err := t.dropGeneration(p, building.Generation); err != nil {
					return err
				}
				changed = true
			}
			if err := t.createGeneration(now, p, projectionstore.Building); err != nil {
				return err
			}
			changed = true
		}
	}
	if changed {
		gens = nil // read them again
	}
	due, err := t.projectionsDue(now, gens)
	t.proj.due = due
	return err
}

func (t *Tenant) createGeneration(now int64, p *projectionReg, role string) error {
	gen, err := t.projections.Next(p.Name)
	if err != nil {
		return err
	}
	names := p.names(gen)
	for _, sql := range p.Tables {
		s, err := projection.Check(sql, projection.Schema, names)
		if err != nil {
			return err
		}
		if err := t.db.Exec(s); err != nil {
			return printf.Errorf("projection %s: create generation %d: %s: %w", p.Name, gen, oneLine(sql), err)
		}
	}
	return t.projections.Create(now, p.Name, gen, role, p.fingerprint, p.tables())
}

// tables are the logical names of the projection's tables (not indexes).
func (r *projectionReg) tables() []string {
	var out []string
	for _, sql := range r.Tables {
		if name, _ := definedName(sql); !strings.Contains(ascii.ToUpper(sql[:strings.IndexByte(sql, '{')]), "INDEX") {
			out = append(out, name)
		}
	}
	return out
}

// dropGeneration drops a generation's tables (and their indexes) and row:
// those it was created with, whatever the projection's definition is now.
func (t *Tenant) dropGeneration(p *projectionReg, gen int64) error {
	tables, known, err := t.projections.Tables(p.Name, gen)
	if err != nil {
		return err
	}
	if !known {
		tables = p.tables()
	}
	for _, name := range tables {
		if err := t.db.Exec(`DROP TABLE IF EXISTS ` + projection.Physical(p.Name, gen, name)); err != nil {
			return printf.Errorf("projection %s: drop generation %d: %w", p.Name, gen, err)
		}
	}
	delete(t.proj.tx, p.Name+"/"+strconv.FormatInt(gen, 10))
	return t.projections.Delete(p.Name, gen)
}

// ---- catching up ----

// Catch-up budget per alarm: it runs in the tenant's single thread, so it
// stops in time for other requests and continues at the next alarm.
const (
	catchUpEvents = 20_000
	catchUpMs     = 1_000
)

// errStall rolls back a batch whose handler failed.
var errStall = errors.New("a projection handler failed")

// catchUp applies batches to every generation that is behind and not
// waiting to retry, until all are at the head or the budget is spent, and
// swaps in rebuilt generations that reached the head. It returns when
// projection work is next due (now: more to do; 0: none).
func (t *Tenant) catchUp(start int64) (int64, error) {
	gens, err := t.projections.All()
	if err != nil {
		return 0, err
	}
	applied, next := 0, int64(0)
	due := func(at int64) {
		if next == 0 || at < next {
			next = at
		}
	}
	for _, g := range gens {
		p, ok := t.app.projectionBy[g.Name]
		if !ok || g.Fingerprint != p.fingerprint {
			// Not this module's, or built with another definition: a live
			// one serves reads as it is until its rebuild replaces it.
			continue
		}
		for {
			now := t.db.Now()
			if applied >= catchUpEvents || now-start >= catchUpMs {
				due(now)
				return next, nil
			}
			if g.Stalled() && now < g.RetryAt {
				due(g.RetryAt)
				break
			}
			stalled := g.Stalled()
			n, atHead, err := t.applyBatch(now, p, &g)
			if err != nil {
				return 0, err
			}
			if g.Stalled() != stalled && g.Role == projectionstore.Live {
				t.failingChanged(now) // it stalled, or recovered
			}
			applied += n
			if g.Stalled() {
				due(g.RetryAt)
				break
			}
			if atHead {
				if g.Role == projectionstore.Building {
					if err := t.swap(now, p, g); err != nil {
						return 0, err
					}
				}
				break
			}
		}
	}
	return next, nil
}

// applyBatch applies the next batch of g in one transaction. It returns
// how many events it applied and whether g is at the head.
func (t *Tenant) applyBatch(now int64, p *projectionReg, g *projectionstore.Generation) (int, bool, error) {
	applied, atHead := 0, false
	next := *g // g as the transaction leaves it
	err := t.db.Tx(func() error {
		cur, ok, err := t.projections.Get(g.Name, g.Generation)
		switch {
		case err != nil:
			return err
		case !ok || cur.Checkpoint != g.Checkpoint || cur.Role != g.Role:
			return do.ErrGuard // a rebuild or a swap since we read it
		}
		evs, cut, err := t.events.Read(g.Checkpoint, p.Events, p.Batch, projectionBatchBytes)
		if err != nil {
			return err
		}
		b := projection.Batch{Seqs: make([]int64, len(evs)), Cut: cut, Applied: len(evs)}
		for i, e := range evs {
			b.Seqs[i] = e.Seq
		}
		if len(evs) > 0 {
			tx := t.projectionTx(p, g.Generation, now)
			failedAt, herr, err := t.applyEvents(tx, evs)
			if err != nil {
				return err
			}
			// The batch rolled back; the events before the failing one are
			// committed again on their own, and the failing one waits. Should
			// one of those fail now (a handler that is not deterministic), it
			// is the one that waits.
			for herr != nil && failedAt > 0 {
				k, kerr, err := t.applyEvents(tx, evs[:failedAt])
				if err != nil {
					return err
				}
				if kerr == nil {
					break
				}
				failedAt, herr = k, kerr
			}
			if herr != nil {
				b.Applied = failedAt
				b.Error = printf.Sprintf("event %d (%s): %s", evs[failedAt].Seq, evs[failedAt].Type, oneLine(herr.Error()))
			}
		}
		policy := projection.Policy{Batch: p.Batch, Backoff: p.backoff}
		d, err := projection.AfterBatch(cur.Progress(), b, policy, now, mrandFloat())
		if err != nil {
			return printf.Errorf("projection %s generation %d: %w", g.Name, g.Generation, err)
		}
		if err := t.projections.Record(now, g.Name, g.Generation, g.Checkpoint, d); err != nil {
			return err
		}
		applied, atHead, next = b.Applied, d.AtHead, g.After(now, d)
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	*g = next // derived, not read back: the writes were guarded
	if applied > 0 && g.Role == projectionstore.Live && !slices.Contains(t.proj.advanced, g.Name) {
		t.proj.advanced = append(t.proj.advanced, g.Name)
	}
	return applied, atHead, nil
}

// applyEvents applies evs in a savepoint: all, or none. A handler that
// failed is reported by its event's index and its error (herr); err is a
// failure of the storage.
func (t *Tenant) applyEvents(tx *ProjectionTx, evs []eventstore.Event) (failedAt int, herr, err error) {
	err = t.db.Tx(func() error {
		for i, e := range evs {
			ev, err := t.app.typedEvent(eventView(e))
			if err == nil {
				err = callProjection(tx, ev)
			}
			if err != nil {
				failedAt, herr = i, err
				return errStall
			}
		}
		return nil
	})
	if herr != nil {
		return failedAt, herr, nil
	}
	return 0, nil, err
}

// projectionBatchBytes bounds the events' data a projection's batch holds
// at once: a batch of events of the largest size would not fit the
// module's memory. A batch cut short is followed by the next at once.
const projectionBatchBytes = 4 * api.MaxAnswerBytes

func callProjection(tx *ProjectionTx, e api.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = printf.Errorf("panic: %v", p)
		}
	}()
	return tx.p.Handle(tx, e)
}

// swap replaces p's live generation with the rebuilt one g, which is at
// the head: reads move to it in the same transaction.
func (t *Tenant) swap(now int64, p *projectionReg, g projectionstore.Generation) error {
	return t.db.Tx(func() error {
		gens, err := t.projections.All()
		if err != nil {
			return err
		}
		for _, old := range gens {
			if old.Name == p.Name && old.Role == projectionstore.Live {
				if err := t.dropGeneration(p, old.Generation); err != nil {
					return err
				}
			}
		}
		return t.projections.Promote(now, p.Name, g.Generation, g.Checkpoint)
	})
}
