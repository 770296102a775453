package runtime

import (
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/schema"
)

// Migrations: the tenant's storage is brought to the module's schema on
// an instance's first request (admit's prepare), and again on POST
// /migrations. What they left is the Tenant's schema group.

// migrate applies Stile's migrations and then the module's, each in a
// transaction of its own, and registers what the module declares. A
// migration that fails is recorded (schema.ApplyChecked) and the tenant
// goes on serving what does not need it (migrationRefusal); the error is
// only for what keeps the tenant from serving at all.
func (t *Tenant) migrate() error {
	t.schema.migrated = false
	r, err := schema.ApplyChecked(t.db, schema.Ledger, schema.Migrations())
	if err != nil {
		return printf.Errorf("migrate tenant schema: %w", err)
	}
	t.schema.stile = schemaState(r, len(schema.Migrations()))
	t.schema.stileBlocked = r.Failed != nil || r.AheadDestructive()
	t.dir.first = t.dir.first || r.Applied == len(schema.Migrations())
	t.schema.drift = t.schema.drift[:0]
	t.schema.migrated = true
	if t.schema.stileBlocked {
		return t.noteVersions() // only GET /status and POST /migrations serve
	}
	if err := t.readSettings(); err != nil {
		return err
	}
	defer t.forgetSettings()
	t.schema.app = api.SchemaState{Known: int64(len(t.app.migrations))}
	t.schema.appBlocked = nil
	if len(t.app.migrations) > 0 {
		ar, err := schema.ApplyChecked(t.db, AppLedger, t.app.migrations)
		if err != nil {
			return printf.Errorf("migrate the module's own tables: %w", err)
		}
		t.schema.app = schemaState(ar, len(t.app.migrations))
		for _, d := range ar.Drift {
			t.schema.drift = append(t.schema.drift, printf.Sprintf("migration %d_%s of the module's own tables changed after it was applied (applied %s, now %s): it is not run again; restore it, or add a new migration", d.Version, d.Name, d.Applied, d.Current))
		}
		switch {
		case ar.Failed != nil:
			t.schema.appBlocked = api.Refuse(api.CodeMigrationFailed, "migration %d_%s of the module's own tables failed (attempt %d): %s; registered transactions wait for it; fix it and POST /v1/t/%s/migrations", ar.Failed.Version, ar.Failed.Name, ar.Failed.Attempts, firstLine(ar.Failed.Error), t.name)
		case ar.AheadDestructive():
			t.schema.appBlocked = api.Refuse(api.CodeSchemaAhead, "the module's own tables are at migration %d, past this module's %d, and %s: registered transactions would read what it removed; deploy the newer module", ar.Version, len(t.app.migrations), aheadWhy(schemaState(ar, 0).Ahead))
		}
	}
	if t.life.importMark = t.schema.settings[settingImport]; t.life.importMark != "" {
		// Half imported: what follows reads and syncs the tenant's rows,
		// which is for the import's end (a new instance then).
		t.dir.versions = true
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
	if err := t.noteVersions(); err != nil {
		return err
	}
	return t.loadFailing(t.db.Now())
}

// migrationRefusal is the 503 of a route that needs a migration that
// failed, or that an older module must not run over; nil when it serves.
func (t *Tenant) migrationRefusal(c *call) *api.Error {
	kind := c.req.Kind
	if t.schema.stileBlocked && (kind == do.KindAlarm || c.route != api.RouteStatus && c.route != api.RouteMigrate) {
		st := t.schema.stile
		if st.Failed != nil {
			return api.Refuse(api.CodeMigrationFailed, "migration %d_%s of Stile's tables failed (attempt %d): %s; every route but GET /status waits for it: POST /v1/t/%s/migrations tries it again", st.Failed.Version, st.Failed.Name, st.Failed.Attempts, firstLine(st.Failed.Error), t.name)
		}
		return api.Refuse(api.CodeSchemaAhead, "Stile's tables are at migration %d, past this module's %d, and %s: deploy the newer module", st.Version, st.Known, aheadWhy(st.Ahead))
	}
	if t.schema.appBlocked != nil && kind == do.KindAPI && c.route == api.RouteTx {
		return t.schema.appBlocked
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
