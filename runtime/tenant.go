package runtime

import (
	"errors"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/fencestore"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
	"github.com/stile-run/stile/runtime/internal/push"
)

// Tenant serves the API of one tenant: it is what a tenant module does for
// the object that runs it. A wasip1 module holds one; the native host holds
// one per tenant. It is not safe for concurrent use: hosts serialize calls.
type Tenant struct {
	app         *App
	name        string // learnt from the first API request's path
	db          *do.DB
	store       *fencestore.Store
	events      *eventstore.Store
	reactions   *inboxstore.Store
	projections *projectionstore.Store

	// What lives across requests, each group kept by the code that owns
	// it. What one request decides is its call's (call.go).
	life      lifecycle     // created, being imported, erased (erase.go, export.go)
	schema    tenantSchema  // the migrations and versions (migrate.go)
	due       dueCache      // the alarm (due.go)
	executors executorState // pushes and claims (pushes.go, executors.go)
	dir       directory     // what the directory was told (directory.go)
	fail      failWatch     // what it was told is failing (failing.go)
	proj      projState     // the projections' work (projections.go)
	retain    retainState   // the retention policy (retention.go)
	meter     meter         // usage and the budget (usage.go)

	// out and body are buffers reused by every request, for the response
	// frame and the answer's body; they carry nothing from one to the
	// next. cur is the room of the request being answered: each request
	// overwrites it whole when it starts (start), so nothing carries over
	// and no request allocates one.
	out, body []byte
	cur       call
}

// lifecycle is whether the tenant exists, is being imported, or was
// erased.
type lifecycle struct {
	// exists says the tenant was created (its storage has the migration
	// ledger, or an erased tenant's tombstone). A tenant that does not
	// exist answers 404 tenant_not_found and writes nothing, unless the
	// request creates it.
	exists bool
	// tombChecked says the tombstone was looked for; erased that the
	// tenant was erased (erase.go), at erasedAt.
	tombChecked bool
	erased      bool
	erasedAt    int64
	// importMark is the mark of the import under way ("": none), which
	// holds the tenant for itself (importServes).
	importMark string
}

// tenantSchema is the tenant's tables' versions, as migrate left them.
type tenantSchema struct {
	// migrated says migrate ran on this instance (POST /migrations runs
	// it again).
	migrated bool
	// settings is every setting, while migrate runs (readSettings).
	settings map[string]string
	// stile and app are the two ledgers; stileBlocked says Stile's own
	// schema is not usable (a migration failed, or a destructive one is
	// ahead), appBlocked is the refusal of the routes that run the
	// module's SQL (nil: they serve).
	stile, app   api.SchemaState
	stileBlocked bool
	appBlocked   *api.Error
	// drift reports applied migrations whose SQL changed since (GET /status).
	drift []string
	// module is the module's version, as its host says (stile-module).
	module string
}

// executorState is what the tenant knows of its executors.
type executorState struct {
	// pushes holds the pushes to executors in flight (pushes.go; nil:
	// none yet).
	pushes *push.Tracker
	// claims is what executors' claims named (executors.go).
	claims claimsSeen
}

// directory is what the tenant directory was told, and what it is to be
// told next (directory.go).
type directory struct {
	// first says this instance created the tenant's storage; versions
	// that the next response tells the directory the tenant's versions
	// (noteVersions).
	first, versions bool
	// told is what the directory was last told of readiness.
	told dirState
}

// projState is the projections' pending work.
type projState struct {
	// tx holds each generation's handler transaction, reused.
	tx map[string]*ProjectionTx
	// due is when projection work is next due (0: none): now after
	// events were appended, a stalled event's retry time.
	due int64
	// advanced are the live projections that applied events in
	// transactions that committed since the last answer (for watchers).
	advanced []string
}

// retainState is the retention policy in force: the module's (policy),
// under the tenant's override (over, the fields in set); due when the
// alarm next looks for rows to delete (0: not until a write).
type retainState struct {
	policy api.Retention
	over   api.Retention
	set    api.RetentionFields
	due    int64
	looked int64 // when the last look ran (0: none known)
}

// NewTenant returns a tenant serving app's API over h.
func NewTenant(app *App, h do.Host) *Tenant {
	t := &Tenant{}
	t.init(app, do.NewDB(h))
	return t
}

// init sets up a tenant that has read nothing yet.
func (t *Tenant) init(app *App, db *do.DB) {
	t.app, t.db = app, db
	t.store = fencestore.New(db, &t.due)
	t.events = eventstore.New(db)
	t.reactions = inboxstore.New(db, t.events, &t.due)
	t.projections = projectionstore.New(db)
	t.proj.tx = map[string]*ProjectionTx{}
	if app != nil {
		t.store.Limits = app.Limits()
		t.store.Rates = app.Rates()
	}
}

// reset forgets everything the tenant read, as a new instance would: after
// an import replaced its storage.
func (t *Tenant) reset() {
	app, db, name, out, body, cur, pending, fail := t.app, t.db, t.name, t.out, t.body, t.cur, t.meter.pending, t.fail
	*t = Tenant{}
	t.init(app, db)
	t.name, t.out, t.body, t.cur = name, out, body, cur // the request being answered still uses cur
	t.meter.pending = pending                           // the pushes counted are still to record
	t.fail = fail                                       // an import changed what is failing: the look stays due
}

// Handle serves one request frame and returns the response frame. The
// returned slice is valid until the next call.
func (t *Tenant) Handle(frame []byte) []byte {
	var resp do.Response
	req, err := do.DecodeRequest(frame)
	if err != nil {
		resp = errorResponse(api.Refuse(api.CodeInvalidRequest, "the host sent a malformed request frame: %v", err))
	} else {
		resp = t.serve(req)
	}
	t.out = do.AppendResponse(t.out[:0], resp)
	return t.out
}

// jsonBody appends a response body: an api type's AppendJSON method value
// (an interface holding the api values made the module 1.3 KB bigger
// gzipped: every boxed type keeps methods fmt might call).
type jsonBody func([]byte) []byte

// result is what a route decided.
type result struct {
	status int
	body   jsonBody // nil for no body
	holdMs int64
	// hold is the work a held claim waits for (stile-hold).
	hold do.Hold
	idle bool // a claim that found nothing: the tenant may be idle
	// finished says the route may have ended a job (held waits for jobs
	// look again); holdFinish that the hold waits for a job to end.
	finished, holdFinish bool
	// headers are the route's own headers of the answer.
	headers do.Headers
}

// route runs inside the request's transaction.
type route func(now int64) (result, error)

var errNoServe = errors.New("this module never called runtime.Serve")

// serve answers a request, naming the route it matched. A refusal before
// the transaction reads no committed state and leaves the host's alarm as
// it is.
func (t *Tenant) serve(req do.Request) do.Response {
	c := &t.cur
	c.start(req, t.body)
	// The stores stamp the request's traceparent on the jobs and events it
	// writes, whichever route or due work writes them.
	tp := req.Headers.Get(do.HeaderTraceparent)
	t.events.Traceparent, t.store.Traceparent = tp, tp
	// Changes are kept for the host's watchers only while it has some
	// (stile-watched): a tenant nobody watches spends nothing on them.
	watched := req.Headers.Get(do.HeaderWatched) != ""
	t.store.Watched, t.reactions.Watched = watched, watched
	if m := req.Headers.Get(do.HeaderModule); m != "" {
		t.schema.module = m
	}
	resp := t.answer(c)
	t.body = c.body // its room, for the next answer
	if c.route.Pattern != "" {
		resp.Headers = append(resp.Headers, do.Header{Name: do.HeaderRoute, Value: c.route.Method + " " + c.route.Pattern})
	}
	return resp
}

// answer takes a request through its phases; what a failure answers
// depends on the phase:
//
//   - admit: the tenant's identity, its tombstone, the route and its
//     validation, migrations. Nothing of the request is written; a
//     refusal is its own answer.
//   - transact: one storage transaction runs the due work, the route,
//     the audit row and the encoding of the answer's body, so that running
//     out of memory on a large answer rolls the request back. A failure
//     here wrote nothing (api.Internal).
//   - adopt and afterCommit: what follows the commit (an import's or an
//     erasure's new state, retention's settling, the alarm's catch-up and
//     purge). The request's writes stand: a failure here is
//     api.AnswerLost, never "wrote nothing".
//   - respond: the response (its wakes, push planning, the directory's
//     note, the next due time), under the same rule.
//
// A trap (a Go panic) is reported by the host, which knows whether a
// transaction of the call had committed (host.ErrAnswerLost).
func (t *Tenant) answer(c *call) do.Response {
	// What the instance's start applied is the first API answer's to
	// tell (an alarm's answer reaches no one); later answers applied
	// nothing.
	if c.req.Kind == do.KindAPI {
		defer func() { t.schema.stile.Applied, t.schema.app.Applied = 0, 0 }()
	}
	if refusal := t.admit(c); refusal != nil {
		return *refusal
	}
	if c.fresh {
		// A query that asks for freshness: what the alarm would catch up
		// now is caught up first (bounded as the alarm's is), so that it
		// answers at once rather than after the alarm.
		if err := t.catchUpDue(c.now); err != nil {
			// The query still answers, from what is applied (or 409 if
			// that is short of min_seq); the alarm tries again.
			t.db.Log(do.LevelWarn, printf.Sprintf("catch-up before a query failed: %v", err))
		}
	}
	if err := t.transact(c); err != nil {
		return t.rolledBack(err)
	}
	if c.committed && c.importDone {
		defer t.reset() // after the answer, the tenant reads everything anew
	}
	if erased := t.adopt(c); erased != nil {
		return *erased
	}
	if err := t.afterCommit(c); err != nil {
		return c.lost(err)
	}
	resp, err := t.respond(c)
	if err != nil {
		return c.lost(err)
	}
	return resp
}

// lost answers a failure after the transaction: api.AnswerLost when it
// committed (what it wrote stands), with the cause.
func (c *call) lost(err error) do.Response {
	if c.committed {
		return errorResponse(api.AnswerLost(err.Error()))
	}
	return errorResponse(api.Internal(err.Error()))
}

// early is a refusal admit answers, before the transaction.
func early(r do.Response) *do.Response { return &r }

// admit is the first phase: it writes nothing of the request, and answers
// a refusal itself (nil: go on).
func (t *Tenant) admit(c *call) *do.Response {
	if refusal := t.identify(c); refusal != nil {
		return refusal
	}
	absent := !t.life.exists
	refusal := t.routeCall(c)
	if refusal == nil {
		refusal = t.prepare(c)
	}
	if refusal == nil {
		// Admitted so far: the request's time, what the host counted, and
		// the budget, which may still refuse it.
		c.now = t.db.Now()
		if err := t.meterCall(c); err != nil {
			return early(errorResponse(api.Internal(err.Error())))
		}
		refusal = t.overBudget(c)
	}
	if refusal != nil && absent {
		// Nothing is written for a tenant that was never created, and the
		// host is told, so that it keeps no storage it opened for it.
		refusal.Headers = append(refusal.Headers, do.Header{Name: do.HeaderAbsent, Value: "1"})
	}
	return refusal
}

// identify learns which tenant the request is for and whether it was
// created or erased (admit).
func (t *Tenant) identify(c *call) *do.Response {
	req := c.req
	if t.app == nil {
		return early(errorResponse(api.Internal(errNoServe.Error())))
	}
	if name := req.Headers.Get(do.HeaderTenant); name != "" && name != t.name {
		// The transport names the tenant the object is: the module takes
		// it as its own before any path can.
		if t.name != "" || !api.ValidTenant(name) {
			return early(errorResponse(api.Refuse(api.CodeInvalidTenant, "this object serves tenant %q, and its host says %q", t.name, name)))
		}
		t.name = name
	}
	if !t.schema.migrated && !t.life.tombChecked {
		// An erased tenant answers 410 to everything, even a request that
		// would be refused: read its tombstone before anything else.
		erased, err := t.readTombstone()
		if err != nil {
			return early(errorResponse(api.Internal(err.Error())))
		}
		t.life.erased, t.life.tombChecked = erased, true
	}
	if t.life.erased {
		if t.name == "" {
			t.name, _, _ = api.SplitTenantPath(req.Path)
		}
		return early(t.erasedResponse(req))
	}
	if !t.life.exists {
		ok, err := t.hasLedger()
		if err != nil {
			return early(errorResponse(api.Internal(err.Error())))
		}
		t.life.exists = ok
	}
	return nil
}

// routeCall matches the request's route and validates its input (admit);
// it decides whether the request creates the tenant.
func (t *Tenant) routeCall(c *call) *do.Response {
	req := c.req
	if !t.life.exists && req.Kind == do.KindAPI {
		// A request that cannot create the tenant is answered before its
		// route or input is looked at, as the hosts answer it before
		// opening any storage.
		tenant, rest, _ := api.SplitTenantPath(req.Path)
		role, least, err := t.creation(req)
		if err != nil {
			return early(errorResponse(api.Internal(err.Error())))
		}
		if api.ValidTenant(tenant) && !api.MayCreate(req.Method, rest, role, least) {
			return early(errorResponse(api.TenantNotFound(tenant)))
		}
	}
	c.noticedBy = "request"
	switch req.Kind {
	case do.KindAlarm:
		c.noticedBy = "alarm"
		c.run = func(int64) (result, error) { return result{status: statusOK}, nil }
	case do.KindAPI:
		run, refused, allow := t.match(c)
		if refused != nil {
			resp := errorResponse(refused)
			if allow != "" {
				resp.Headers = do.Headers{{Name: do.HeaderAllow, Value: allow}}
			}
			return early(resp)
		}
		c.run = run
	default:
		return early(errorResponse(api.Refuse(api.CodeInvalidRequest, "unknown request kind %d", byte(req.Kind))))
	}
	if !t.life.exists {
		if req.Kind != do.KindAPI {
			return early(do.Response{Status: statusOK}) // an alarm of a tenant never created: nothing is due
		}
		c.creating = true // api.MayCreate let it through, above
	}
	return nil
}

// prepare readies the tenant's storage for the route (admit): its
// migrations, and what a failed one or an import under way refuses.
func (t *Tenant) prepare(c *call) *do.Response {
	kind := c.req.Kind
	// Only a request that passed validation migrates: a refused one (a
	// mistyped tenant name, say) leaves the object's storage untouched.
	if kind == do.KindAPI && c.route == api.RouteMigrate {
		t.schema.migrated = false // try the pending migrations again now
	}
	if kind == do.KindAPI && c.route == api.RouteErase {
		// Erasing drops whatever tables there are: it needs no migration,
		// and works whatever state they are in.
		return nil
	}
	if !t.schema.migrated {
		if err := t.migrate(); err != nil {
			return early(errorResponse(api.Internal(err.Error())))
		}
		t.life.exists = true
	}
	if refused := t.migrationRefusal(c); refused != nil {
		return early(errorResponse(refused))
	}
	if t.life.importMark != "" && !t.importServes(c) {
		if kind == do.KindAlarm {
			// Nothing is due while rows come in; the import's end looks.
			return early(do.Response{Status: statusOK})
		}
		return early(errorResponse(api.Refuse(api.CodeImportConflict, "tenant %s is being imported (the export with mark %s): until its last page, or DELETE /v1/t/%s/import to abort it, only the import's pages, GET /status and an erase are served", t.name, t.life.importMark, t.name)))
	}
	return nil
}

// creation is what decides whether req creates the tenant: the caller's
// role and the least role whose writes create ("": none), from the host's
// headers.
func (t *Tenant) creation(req do.Request) (role, least api.Role, err error) {
	least, err = api.ParseCreateRole(req.Headers.Get(do.HeaderCreate))
	role = api.Role(req.Headers.Get(do.HeaderPrincipal))
	if role == "" {
		role = api.RoleAdmin // a host that knows only the admin token
	}
	return role, least, err
}

// transact is the second phase: the request's one transaction, which
// encodes the answer's body too (c.res, c.body). A refusal (an
// *api.Error) rolls back and is the answer, c.committed false; a fence's
// refusal commits its audit row, c.committed true. The error is any other
// failure: it rolled back.
func (t *Tenant) transact(c *call) error {
	encoded := false
	err := t.db.Tx(func() error {
		if err := t.inTx(c); err != nil {
			return err
		}
		encoded = true
		return nil
	})
	// The one mapping from a route's error to its answer: a refusal (an
	// *api.Error, from the route or a store) answers its status and, but
	// for a fence's (inTx), rolls back everything the route wrote; any
	// other error is a 500.
	var refused *api.Error
	if errors.As(err, &refused) {
		c.res = refusal(refused)
		c.body = c.res.body(c.body[:0])
		return nil
	}
	if err != nil {
		return err
	}
	if !encoded {
		return errors.New("the request's transaction ended without its answer")
	}
	c.committed = true
	return nil
}

// inTx is what the request's transaction runs: due work, the route, its
// audit row, and the answer's body.
func (t *Tenant) inTx(c *call) error {
	// Nothing is due in a tenant being erased, whose tables may be at
	// any migration, nor in one being imported: due work would move
	// the rows that came in before the rest has.
	settled := c.req.Kind != do.KindAPI || c.route != api.RouteErase && c.route != api.RouteImport && c.route != api.RouteAbortImport
	if settled {
		if err := t.applyDue(c); err != nil {
			return err
		}
	}
	res, err := c.run(c.now)
	// An erasure erases its audit list too; an import brings the
	// exported tenant's, and its abort leaves the tenant as empty as
	// it found it.
	if r := c.route; err == nil && r.Audited() && res.status < 300 && !c.erasing && r != api.RouteImport && r != api.RouteAbortImport {
		err = t.audit(c, res.status)
	}
	// A fence's refusal (a stale code) commits: the store wrote its
	// bounded audit row and nothing else.
	if refused := (*api.Error)(nil); errors.As(err, &refused) && refused.Code.Stale() {
		res, err = refusal(refused), nil
	}
	if err != nil {
		return err
	}
	if settled {
		// What the tenant used, when it has waited long enough: in this
		// transaction, so a busy tenant's day costs one write per 30 s.
		if err := t.recordUsage(c); err != nil {
			return err
		}
	}
	// The answer is made before the commit: one too large for the
	// module's memory traps here and rolls the request back, instead
	// of losing the answer of a request that committed.
	c.res, c.body = res, c.body[:0]
	if res.body != nil {
		c.body = res.body(c.body)
	}
	return nil
}

// forgetUncommitted forgets what the stores reported of a transaction
// that did not commit: the due times, what it woke, the paused and
// replaying reactions read, its changes. (What is failing was read
// already, in afterCommit, or is forgotten here.)
func (t *Tenant) forgetUncommitted() {
	t.due.Unknown()
	t.store.Woke()
	t.store.Changes()
	t.store.FailingChanged()
	t.reactions.Woke()
	t.reactions.Forget()
	t.reactions.Changes()
	t.reactions.FailingChanged()
}

// rolledBack answers a transaction that failed: it wrote nothing, and
// what the stores reported of it did not happen.
func (t *Tenant) rolledBack(err error) do.Response {
	t.forgetUncommitted()
	t.events.Appended()
	resp := errorResponse(api.Internal(err.Error()))
	if ferr := t.refreshDue(); ferr != nil {
		return errorResponse(api.Internal(ferr.Error()))
	}
	resp.AlarmAt = t.alarmAt()
	return resp
}

// adopt makes what a committed request decided the tenant's own: an
// import begun or ended, an erasure. It answers an erasure (non-nil):
// nothing of the tenant is left to read.
func (t *Tenant) adopt(c *call) *do.Response {
	if !c.committed {
		return nil
	}
	if c.importBegun != "" {
		t.life.importMark = c.importBegun
	}
	if c.importDone {
		// The alarm follows what was imported (read in respond); after
		// the answer, the tenant reads everything anew (answer).
		t.due.Unknown()
		t.retain.due = c.now
	}
	if c.erasing {
		// Answer, clear the alarm, and tell the directory.
		t.life.erased, t.life.erasedAt = true, c.now
		t.executors.pushes = nil
		return &do.Response{Status: c.res.status, AlarmAt: 0, Body: c.body, Headers: do.Headers{t.erasedNote()}}
	}
	return nil
}

// afterCommit is the work that follows the request's transaction, in
// transactions of its own; what the stores reported of a transaction that
// rolled back is forgotten.
func (t *Tenant) afterCommit(c *call) error {
	t.usageCommitted(c)
	t.settleBudget(c)
	if err := t.settleRetention(c); err != nil {
		return printf.Errorf("settle retention: %w", err)
	}
	if c.committed && (c.req.Kind == do.KindAlarm || c.req.Method != "GET") {
		if err := t.wrote(c.now); err != nil {
			return printf.Errorf("note the write: %w", err)
		}
	}
	// Read whether or not it committed: what a rollback reported is
	// forgotten with it.
	jobsFailing, deliveriesFailing := t.store.FailingChanged(), t.reactions.FailingChanged()
	if c.committed && (jobsFailing || deliveriesFailing || changesFailing(c.route)) {
		t.failingChanged(c.now)
	}
	if c.committed && c.importDone {
		// The imported setting says what the exported tenant was told: the
		// next look tells the directory again. The mark stays in memory (a
		// setting written now would be the copy's alone, and its export
		// would differ from the original's).
		t.fail.retell = true
		if t.fail.changedAt == 0 {
			t.fail.changedAt = c.now
		}
	}
	appended := t.events.Appended()
	if !c.committed {
		c.dueEnded = false
		t.forgetUncommitted() // a refusal rolled back what the stores reported
		appended = false
	}
	if appended && len(t.app.projections) > 0 && (t.proj.due == 0 || c.now < t.proj.due) {
		t.proj.due = c.now // the alarm catches the projections up
	}
	if c.req.Kind == do.KindAlarm {
		return t.alarmWork(c.now)
	}
	return nil
}

// catchUpDue catches the projections up if that is due (the alarm's
// work, which a query asking for freshness does first too), in
// transactions of its own.
func (t *Tenant) catchUpDue(now int64) error {
	if len(t.app.projections) > 0 && t.proj.due != 0 && now >= t.proj.due {
		var err error
		if t.proj.due, err = t.catchUp(now); err != nil {
			t.proj.due = now // the host retries the alarm
			return printf.Errorf("projection catch-up failed: %w", err)
		}
	}
	return nil
}

// alarmWork is what an alarm does once its due work committed, each in
// transactions of its own: projections catch up, retention deletes a
// slice.
func (t *Tenant) alarmWork(now int64) error {
	if err := t.catchUpDue(now); err != nil {
		return err
	}
	if t.retain.due != 0 && now >= t.retain.due {
		var err error
		var deadGone bool
		if t.retain.due, deadGone, err = t.purge(now); err != nil {
			t.retain.due = now // the host retries the alarm
			return printf.Errorf("retention failed: %w", err)
		}
		if deadGone {
			t.failingChanged(now)
		}
	}
	return t.lookAtFailing(now)
}

// respond is the last phase: the response to a request whose transaction
// ended, with what it woke, the pushes to plan, the directory's note and
// the alarm. An error is a failure after the transaction (lost).
func (t *Tenant) respond(c *call) (do.Response, error) {
	res := c.res
	resp := do.Response{Status: res.status, HoldMs: res.holdMs, Body: c.body, Headers: res.headers}
	if res.finished || c.dueEnded {
		resp.Flags |= do.FlagFinished
	}
	if res.holdFinish {
		resp.Flags |= do.FlagHoldFinished
	}
	if res.holdMs > 0 {
		if h := res.hold.AppendJSON(nil); len(h) <= do.MaxHeaderValue {
			resp.Headers = append(resp.Headers, do.Header{Name: do.HeaderHold, Value: string(h)}) // else any work wakes it
		}
	}
	jobsWoke, reactionsWoke := t.wake(&resp)
	if h, ok := t.changes(); ok {
		resp.Headers = append(resp.Headers, h)
	}
	idle := res.idle
	if c.req.Headers.Get(do.HeaderExecutor) != "" && t.name != "" {
		// A single enqueue, with no due work, made one job ready.
		one := jobsWoke && !reactionsWoke && !c.dueApplied && c.route == api.RouteEnqueue
		h, ok, nothing, err := t.planPushes(c.now, jobsWoke, reactionsWoke, c.pushAgain, one)
		if err != nil {
			return do.Response{}, printf.Errorf("plan pushes: %w", err)
		}
		if ok {
			resp.Headers = append(resp.Headers, h)
		}
		idle = idle || nothing
	}
	if h, ok := t.directoryNote(jobsWoke || reactionsWoke, idle, t.usageNote(c)); ok {
		resp.Headers = append(resp.Headers, h)
	}
	if t.fail.note != "" {
		resp.Headers = append(resp.Headers, do.Header{Name: do.HeaderFailing, Value: t.fail.note})
		t.fail.note = ""
	}
	// The alarm follows committed state, whatever the request did. An
	// alarm re-reads it once its time came: the incremental tracking is
	// exact by construction, but an alarm that fired for work no longer
	// there must not keep firing.
	if c.req.Kind == do.KindAlarm && t.due.at != 0 && t.due.at <= c.now {
		t.due.Unknown()
	}
	if err := t.refreshDue(); err != nil {
		return do.Response{}, printf.Errorf("read the next due time: %w", err)
	}
	resp.AlarmAt = t.alarmAt()
	return resp, nil
}

// wake says in resp which held claims what the request committed may
// satisfy (FlagWake, stile-woke), and whether it woke jobs and reactions.
func (t *Tenant) wake(resp *do.Response) (jobs, reactions bool) {
	woke, reactionsWoke := t.store.Woke(), t.reactions.Woke()
	if !woke.Any && !reactionsWoke {
		return false, false
	}
	resp.Flags |= do.FlagWake
	if !woke.All {
		// Only the held claims this work may satisfy wake.
		w := do.Hold{Queues: woke.Queues, Kinds: woke.Kinds, Reactions: reactionsWoke}
		if woke.AnyKind {
			w.Kinds = nil
		}
		if h := w.AppendJSON(nil); len(h) <= do.MaxHeaderValue {
			resp.Headers = append(resp.Headers, do.Header{Name: do.HeaderWoke, Value: string(h)}) // else every claim wakes
		}
	}
	return woke.Any, reactionsWoke
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// errorResponse answers a refusal; it leaves the alarm unchanged.
func errorResponse(e *api.Error) do.Response {
	return do.Response{Status: e.Status, AlarmAt: do.AlarmUnchanged, Body: e.AppendJSON(nil)}
}
