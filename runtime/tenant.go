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
	"github.com/stile-run/stile/schema"
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
	projTx      map[string]*ProjectionTx
	// projDue is when projection work is next due (0: none): now after
	// events were appended, a stalled event's retry time.
	projDue int64

	migrated      bool
	settings      map[string]string // every setting, while migrate runs (readSettings)
	schemaVersion int64
	// stileSchema and appSchema are the two ledgers as migrate left them;
	// stileBlocked says Stile's own schema is not usable (a migration
	// failed, or a destructive one is ahead), appBlocked is the refusal of
	// the routes that run the module's SQL (nil: they serve).
	stileSchema, appSchema api.SchemaState
	stileBlocked           bool
	appBlocked             *api.Error
	// module is the module's version, as its host says (stile-module).
	module string
	// erased says the tenant was erased (erase.go), at erasedAt; erasing
	// that the request being served erases it.
	erased  bool
	erasing bool
	// importDone says the request imported an export's last page, or
	// aborted an import: once it commits, the tenant forgets what it read
	// (reset).
	importDone bool
	// importUnder is the mark of the import under way ("": none), which
	// holds the tenant for itself (importServes); importBegun the mark a
	// first page sets once it commits.
	importUnder, importBegun string
	erasedAt                 int64
	tombChecked              bool
	// exists says the tenant was created (its storage has the migration
	// ledger, or an erased tenant's tombstone); creating that a request
	// creates it. A tenant that does not exist answers 404
	// tenant_not_found and writes nothing, unless the request creates it.
	exists, creating bool
	// drift reports applied migrations whose SQL changed since (GET /status).
	drift []string

	// due is the earliest due time of committed state: the alarm, and the
	// reason a request may skip due work. The store tells it how writes
	// move due times; it is re-read only when the earliest may have gone.
	due dueCache

	// pushTracker holds the pushes to executors in flight (pushes.go);
	// pushAgain says an ended push asked to look for ready work again.
	pushTracker *push.Tracker
	pushAgain   bool
	// claims is what executors' claims named (executors.go).
	claims claimsSeen

	// dirFirst says this request created the tenant's storage; dirState
	// is what the directory was last told (directory.go).
	dirFirst bool
	dirState dirState
	// dirVersions says the next response tells the directory the tenant's
	// versions (noteVersions).
	dirVersions bool

	// dueEnded says the request's due work expired a lease (which may have
	// ended a job): the response says FlagFinished. dueApplied says the
	// request applied due work at all.
	dueEnded, dueApplied bool

	// route is the route the request matched ("" before a match): the
	// response names it in stile-route, for the host's logs and metrics.
	route api.Route
	// traceparent is the request's (its frame header), stored with the
	// jobs it enqueues.
	traceparent string

	// retention is the policy in force: the module's, under the tenant's
	// override (retentionOver, the fields in retentionSet); retainDue when
	// the alarm next looks for rows to delete (0: not until a write).
	retention        api.Retention
	retentionOver    api.Retention
	retentionSet     api.RetentionFields
	retainDue        int64
	pendingRetention *pendingRetention
	// dbBytes is the request's stile-db-bytes header (GET /storage).
	dbBytes string
	// heldTenant and heldToken are the claims the host holds for the
	// tenant and for the request's token (stile-held).
	heldTenant, heldToken int

	out  []byte // the response frame, reused
	body []byte // the response body, reused
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
	t.projTx = map[string]*ProjectionTx{}
	if app != nil {
		t.store.Limits = app.Limits()
	}
}

// reset forgets everything the tenant read, as a new instance would: after
// an import replaced its storage.
func (t *Tenant) reset() {
	app, db, name, out, body := t.app, t.db, t.name, t.out, t.body
	*t = Tenant{}
	t.init(app, db)
	t.name, t.out, t.body = name, out, body
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
}

// route runs inside the request's transaction.
type route func(now int64) (result, error)

var errNoServe = errors.New("this module never called runtime.Serve")

// serve answers a request. A refusal before the transaction reads no
// committed state and leaves the host's alarm as it is.
func (t *Tenant) serve(req do.Request) do.Response {
	t.route = api.Route{}
	t.traceparent = req.Headers.Get(do.HeaderTraceparent)
	t.events.Traceparent = t.traceparent
	t.dbBytes = req.Headers.Get(do.HeaderDBBytes)
	t.heldTenant, t.heldToken = do.ParseHeldCounts(req.Headers.Get(do.HeaderHeld))
	if m := req.Headers.Get(do.HeaderModule); m != "" {
		t.module = m
	}
	resp := t.answer(req)
	if t.route.Pattern != "" {
		resp.Headers = append(resp.Headers, do.Header{Name: do.HeaderRoute, Value: t.route.Method + " " + t.route.Pattern})
	}
	return resp
}

// answer is serve's answer before it names its route. A request goes
// through four phases, and what a failure answers depends on the phase:
//
//   - admit: the tenant's identity, its tombstone, the route and its
//     validation, migrations. Nothing of the request is written; a
//     refusal is its own answer.
//   - transact: one storage transaction runs the due work, the route,
//     the audit row and the encoding of the answer's body, so that running
//     out of memory on a large answer rolls the request back. A failure
//     here wrote nothing (api.Internal).
//   - after commit: what follows the commit (retention's settling, the
//     alarm's catch-up and purge, push planning, the directory's note,
//     the next due time). The request's writes stand: a failure here is
//     api.AnswerLost, never "wrote nothing".
//   - respond: the response frame.
//
// A trap (a Go panic) is reported by the host, which knows whether a
// transaction of the call had committed (host.ErrAnswerLost).
func (t *Tenant) answer(req do.Request) do.Response {
	// What the instance's start applied is the first answer's to tell;
	// later answers applied nothing.
	defer func() { t.stileSchema.Applied, t.appSchema.Applied = 0, 0 }()
	run, noticedBy, refused := t.admit(req)
	if refused != nil {
		return *refused
	}
	now := t.db.Now()
	res, committed, err := t.transact(now, req, run, noticedBy)
	if err != nil {
		t.dueEnded, t.pushAgain, t.importDone, t.erasing = false, false, false, false
		t.importBegun = ""
		t.pendingRetention = nil
		t.due.Unknown() // what the stores reported did not commit
		t.store.Woke()  // nor what they woke
		t.reactions.Woke()
		t.events.Appended()
		resp := errorResponse(api.Internal(err.Error()))
		if ferr := t.refreshDue(); ferr != nil {
			return errorResponse(api.Internal(ferr.Error()))
		}
		resp.AlarmAt = t.alarmAt()
		return resp
	}
	return t.afterCommit(now, req, res, committed)
}

// admit is the first phase: it writes nothing of the request, and answers
// a refusal itself (nil: go on).
func (t *Tenant) admit(req do.Request) (run route, noticedBy string, refusal *do.Response) {
	refuse := func(r do.Response) (route, string, *do.Response) { return nil, "", &r }
	if t.app == nil {
		return refuse(errorResponse(api.Internal(errNoServe.Error())))
	}
	if name := req.Headers.Get(do.HeaderTenant); name != "" && name != t.name {
		// The transport names the tenant the object is: the module takes
		// it as its own before any path can.
		if t.name != "" || !api.ValidTenant(name) {
			return refuse(errorResponse(api.Refuse(api.CodeInvalidTenant, "this object serves tenant %q, and its host says %q", t.name, name)))
		}
		t.name = name
	}
	if !t.migrated && !t.tombChecked {
		// An erased tenant answers 410 to everything, even a request that
		// would be refused: read its tombstone before anything else.
		erased, err := t.readTombstone()
		if err != nil {
			return refuse(errorResponse(api.Internal(err.Error())))
		}
		t.erased, t.tombChecked = erased, true
	}
	if t.erased {
		if t.name == "" {
			t.name, _, _ = api.SplitTenantPath(req.Path)
		}
		return refuse(t.erasedResponse(req))
	}
	t.creating = false
	if !t.exists {
		ok, err := t.hasLedger()
		if err != nil {
			return refuse(errorResponse(api.Internal(err.Error())))
		}
		t.exists = ok
	}
	if !t.exists {
		// Nothing is written for a tenant that was never created, and the
		// host is told, so that it keeps no storage it opened for it.
		defer func() {
			if refusal != nil {
				refusal.Headers = append(refusal.Headers, do.Header{Name: do.HeaderAbsent, Value: "1"})
			}
		}()
	}
	if !t.exists && req.Kind == do.KindAPI {
		// A request that cannot create the tenant is answered before its
		// route or input is looked at, as the hosts answer it before
		// opening any storage.
		tenant, rest, _ := api.SplitTenantPath(req.Path)
		role, least, err := t.creation(req)
		if err != nil {
			return refuse(errorResponse(api.Internal(err.Error())))
		}
		if api.ValidTenant(tenant) && !api.MayCreate(req.Method, rest, role, least) {
			return refuse(errorResponse(api.TenantNotFound(tenant)))
		}
	}
	noticedBy = "request"
	switch req.Kind {
	case do.KindAlarm:
		noticedBy = "alarm"
		run = func(int64) (result, error) { return result{status: statusOK}, nil }
	case do.KindAPI:
		var refused *api.Error
		var allow string
		if run, refused, allow = t.match(req); refused != nil {
			resp := errorResponse(refused)
			if allow != "" {
				resp.Headers = do.Headers{{Name: do.HeaderAllow, Value: allow}}
			}
			return refuse(resp)
		}
	default:
		return refuse(errorResponse(api.Refuse(api.CodeInvalidRequest, "unknown request kind %d", byte(req.Kind))))
	}
	if !t.exists {
		if req.Kind != do.KindAPI {
			return refuse(do.Response{Status: statusOK}) // an alarm of a tenant never created: nothing is due
		}
		t.creating = true // api.MayCreate let it through, above
	}
	// Only a request that passed validation migrates: a refused one (a
	// mistyped tenant name, say) leaves the object's storage untouched.
	if req.Kind == do.KindAPI && t.route == api.RouteMigrate {
		t.migrated = false // try the pending migrations again now
	}
	if req.Kind == do.KindAPI && t.route == api.RouteErase {
		// Erasing drops whatever tables there are: it needs no migration,
		// and works whatever state they are in.
		return run, noticedBy, nil
	}
	if !t.migrated {
		if err := t.migrate(); err != nil {
			return refuse(errorResponse(api.Internal(err.Error())))
		}
		t.exists = true
	}
	if refused := t.migrationRefusal(req.Kind); refused != nil {
		return refuse(errorResponse(refused))
	}
	if t.importUnder != "" && !t.importServes(req.Kind) {
		if req.Kind == do.KindAlarm {
			// Nothing is due while rows come in; the import's end looks.
			return refuse(do.Response{Status: statusOK})
		}
		return refuse(errorResponse(api.Refuse(api.CodeImportConflict, "tenant %s is being imported (the export with mark %s): until its last page, or DELETE /v1/t/%s/import to abort it, only the import's pages, GET /status and an erase are served", t.name, t.importUnder, t.name)))
	}
	return run, noticedBy, nil
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
// encodes the answer's body too (t.body). A refusal (an *api.Error) rolls
// back and is the answer, committed false; a fence's refusal commits its
// audit row, committed true. err is any other failure: it rolled back.
func (t *Tenant) transact(now int64, req do.Request, run route, noticedBy string) (res result, committed bool, err error) {
	t.dueEnded, t.dueApplied = false, false
	encoded := false
	err = t.db.Tx(func() error {
		// Nothing is due in a tenant being erased, whose tables may be at
		// any migration, nor in one being imported: due work would move
		// the rows that came in before the rest has.
		if r := t.route; req.Kind != do.KindAPI || r != api.RouteErase && r != api.RouteImport && r != api.RouteAbortImport {
			if err := t.applyDue(now, noticedBy); err != nil {
				return err
			}
		}
		var err error
		res, err = run(now)
		// An erasure erases its audit list too; an import brings the
		// exported tenant's, and its abort leaves the tenant as empty as
		// it found it.
		if err == nil && t.route.Audited() && res.status < 300 && !t.erasing && t.route != api.RouteImport && t.route != api.RouteAbortImport {
			err = t.audit(now, req, res.status)
		}
		// A fence's refusal (a stale code) commits: the store wrote its
		// bounded audit row and nothing else.
		if refused := (*api.Error)(nil); errors.As(err, &refused) && refused.Code.Stale() {
			res, err = refusal(refused), nil
		}
		if err != nil {
			return err
		}
		// The answer is made before the commit: one too large for the
		// module's memory traps here and rolls the request back, instead
		// of losing the answer of a request that committed.
		t.body = t.body[:0]
		if res.body != nil {
			t.body = res.body(t.body)
		}
		encoded = true
		return nil
	})
	// The one mapping from a route's error to its answer: a refusal (an
	// *api.Error, from the route or a store) answers its status and, but
	// for a fence's (above), rolls back everything the route wrote; any
	// other error is a 500.
	var refused *api.Error
	if errors.As(err, &refused) {
		res = refusal(refused)
		t.body = res.body(t.body[:0])
		return res, false, nil
	}
	if err != nil {
		return result{}, false, err
	}
	if !encoded {
		return result{}, false, errors.New("the request's transaction ended without its answer")
	}
	return res, true, nil
}

// afterCommit is the last phases: what follows the request's transaction,
// and the response. A failure here answers api.AnswerLost when the
// transaction committed (what it wrote stands), with the cause.
func (t *Tenant) afterCommit(now int64, req do.Request, res result, committed bool) do.Response {
	lost := func(what string, err error) do.Response {
		msg := what + ": " + err.Error()
		if committed {
			return errorResponse(api.AnswerLost(msg))
		}
		return errorResponse(api.Internal(msg))
	}
	again := t.pushAgain
	t.pushAgain = false
	if t.importBegun != "" {
		if committed {
			t.importUnder = t.importBegun
		}
		t.importBegun = ""
	}
	if t.importDone {
		t.importDone = false
		if committed {
			// The alarm follows what was imported (read below); after
			// the answer, the tenant reads everything anew.
			t.due.Unknown()
			t.retainDue = now
			defer t.reset()
		}
	}
	if t.erasing {
		t.erasing = false
		if committed {
			// Nothing of the tenant is left to read: answer, clear the
			// alarm, and tell the directory.
			t.erased, t.erasedAt = true, now
			t.pushTracker = nil
			return do.Response{Status: res.status, AlarmAt: 0, Body: t.body, Headers: do.Headers{t.erasedNote()}}
		}
	}
	if err := t.settleRetention(committed, now); err != nil {
		return lost("settle retention", err)
	}
	if committed && (req.Kind == do.KindAlarm || req.Method != "GET") {
		if err := t.wrote(now); err != nil {
			return lost("note the write", err)
		}
	}
	appended := t.events.Appended()
	if !committed {
		t.dueEnded = false
		t.due.Unknown() // a refusal rolled back what the stores reported
		t.store.Woke()
		t.reactions.Woke()
		appended = false
	}
	if appended && len(t.app.projections) > 0 {
		t.projDue = now // the alarm catches the projections up
	}
	if req.Kind == do.KindAlarm && len(t.app.projections) > 0 && t.projDue != 0 && now >= t.projDue {
		// Projections catch up in their own transactions, after the
		// alarm's due work committed.
		var cerr error
		if t.projDue, cerr = t.catchUp(now); cerr != nil {
			t.projDue = now // the host retries the alarm
			return lost("projection catch-up failed", cerr)
		}
	}
	if req.Kind == do.KindAlarm && t.retainDue != 0 && now >= t.retainDue {
		// Retention deletes a slice in a transaction of its own, after
		// the alarm's due work committed.
		var perr error
		if t.retainDue, perr = t.purge(now); perr != nil {
			t.retainDue = now // the host retries the alarm
			return lost("retention failed", perr)
		}
	}
	resp := do.Response{Status: res.status, HoldMs: res.holdMs, Body: t.body}
	if res.finished || t.dueEnded {
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
	woke, reactionsWoke := t.store.Woke(), t.reactions.Woke()
	jobsWoke := woke.Any
	if jobsWoke || reactionsWoke {
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
	}
	if req.Headers.Get(do.HeaderExecutor) != "" && t.name != "" {
		// A single enqueue, with no due work, made one job ready.
		one := jobsWoke && !reactionsWoke && !t.dueApplied && t.route == api.RouteEnqueue
		h, ok, perr := t.planPushes(now, jobsWoke, reactionsWoke, again, one)
		if perr != nil {
			return lost("plan pushes", perr)
		}
		if ok {
			resp.Headers = append(resp.Headers, h)
		}
	}
	if h, ok := t.directoryNote(jobsWoke || reactionsWoke, res.idle); ok {
		resp.Headers = append(resp.Headers, h)
	}
	// The alarm follows committed state, whatever the request did. An
	// alarm re-reads it once its time came: the incremental tracking is
	// exact by construction, but an alarm that fired for work no longer
	// there must not keep firing.
	if req.Kind == do.KindAlarm && t.due.at != 0 && t.due.at <= now {
		t.due.Unknown()
	}
	if err := t.refreshDue(); err != nil {
		return lost("read the next due time", err)
	}
	resp.AlarmAt = t.alarmAt()
	return resp
}

// migrate applies Stile's migrations and then the module's, each in a
// transaction of its own, and registers what the module declares. A
// migration that fails is recorded (schema.ApplyChecked) and the tenant
// goes on serving what does not need it (migrationRefusal); the error is
// only for what keeps the tenant from serving at all.
func (t *Tenant) migrate() error {
	t.migrated = false
	r, err := schema.ApplyChecked(t.db, schema.Ledger, schema.Migrations())
	if err != nil {
		return printf.Errorf("migrate tenant schema: %w", err)
	}
	t.stileSchema = schemaState(r, len(schema.Migrations()))
	t.stileBlocked = r.Failed != nil || r.AheadDestructive()
	t.dirFirst = t.dirFirst || r.Applied == len(schema.Migrations())
	t.schemaVersion = r.Version
	t.drift = t.drift[:0]
	t.migrated = true
	if t.stileBlocked {
		return t.noteVersions() // only GET /status and POST /migrations serve
	}
	if err := t.readSettings(); err != nil {
		return err
	}
	defer t.forgetSettings()
	t.appSchema = api.SchemaState{Known: int64(len(t.app.migrations))}
	t.appBlocked = nil
	if len(t.app.migrations) > 0 {
		ar, err := schema.ApplyChecked(t.db, AppLedger, t.app.migrations)
		if err != nil {
			return printf.Errorf("migrate the module's own tables: %w", err)
		}
		t.appSchema = schemaState(ar, len(t.app.migrations))
		for _, d := range ar.Drift {
			t.drift = append(t.drift, printf.Sprintf("migration %d_%s of the module's own tables changed after it was applied (applied %s, now %s): it is not run again; restore it, or add a new migration", d.Version, d.Name, d.Applied, d.Current))
		}
		switch {
		case ar.Failed != nil:
			t.appBlocked = api.Refuse(api.CodeMigrationFailed, "migration %d_%s of the module's own tables failed (attempt %d): %s; registered transactions wait for it; fix it and POST /v1/t/%s/migrations", ar.Failed.Version, ar.Failed.Name, ar.Failed.Attempts, firstLine(ar.Failed.Error), t.name)
		case ar.AheadDestructive():
			t.appBlocked = api.Refuse(api.CodeSchemaAhead, "the module's own tables are at migration %d, past this module's %d, and %s: registered transactions would read what it removed; deploy the newer module", ar.Version, len(t.app.migrations), aheadWhy(schemaState(ar, 0).Ahead))
		}
	}
	if t.importUnder = t.settings[settingImport]; t.importUnder != "" {
		// Half imported: what follows reads and syncs the tenant's rows,
		// which is for the import's end (a new instance then).
		t.dirVersions = true
		return nil
	}
	// Every registered reaction gets its checkpoint before any request
	// can append an event it should see.
	if err := t.db.Tx(func() error { return t.reactions.Sync(t.db.Now(), t.app.handlers()) }); err != nil {
		return printf.Errorf("register the module's reactions: %w", err)
	}
	if err := t.db.Tx(func() error { return t.syncProjections(t.db.Now()) }); err != nil {
		return printf.Errorf("register the module's projections: %w", err)
	}
	if err := t.db.Tx(func() error { return t.syncSchedules(t.db.Now()) }); err != nil {
		return printf.Errorf("apply the module's schedules: %w", err)
	}
	if err := t.failUnregistered(t.db.Now()); err != nil {
		return err
	}
	if err := t.loadRetention(t.db.Now()); err != nil {
		return err
	}
	return t.noteVersions()
}

// migrationRefusal is the 503 of a route that needs a migration that
// failed, or that an older module must not run over; nil when it serves.
func (t *Tenant) migrationRefusal(kind do.RequestKind) *api.Error {
	if t.stileBlocked && (kind == do.KindAlarm || t.route != api.RouteStatus && t.route != api.RouteMigrate) {
		st := t.stileSchema
		if st.Failed != nil {
			return api.Refuse(api.CodeMigrationFailed, "migration %d_%s of Stile's tables failed (attempt %d): %s; every route but GET /status waits for it: POST /v1/t/%s/migrations tries it again", st.Failed.Version, st.Failed.Name, st.Failed.Attempts, firstLine(st.Failed.Error), t.name)
		}
		return api.Refuse(api.CodeSchemaAhead, "Stile's tables are at migration %d, past this module's %d, and %s: deploy the newer module", st.Version, st.Known, aheadWhy(st.Ahead))
	}
	if t.appBlocked != nil && kind == do.KindAPI && t.route == api.RouteTx {
		return t.appBlocked
	}
	return nil
}

func schemaState(r schema.Result, known int) api.SchemaState {
	st := api.SchemaState{Version: r.Version, Known: int64(known), Applied: r.Applied}
	if f := r.Failed; f != nil {
		st.Failed = &api.MigrationFailure{Version: f.Version, Name: f.Name, Error: f.Error, At: ts(f.At), Attempts: f.Attempts}
	}
	for _, a := range r.Ahead {
		st.Ahead = append(st.Ahead, api.MigrationAhead{Version: a.Version, Name: a.Name, Class: a.Class})
	}
	return st
}

// aheadWhy names the migrations ahead that are not additive.
func aheadWhy(ahead []api.MigrationAhead) string {
	var names []string
	for _, a := range ahead {
		if a.Class != schema.Additive {
			names = append(names, printf.Sprintf("%d_%s is %s", a.Version, a.Name, a.Class))
		}
	}
	return strings.Join(names, ", ")
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
