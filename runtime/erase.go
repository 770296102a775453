package runtime

import (
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/schema"
)

// Erasure (DELETE /v1/t/{tenant}?confirm={tenant}, admin): one transaction
// drops every trigger, table and index of the tenant, Stile's and the
// module's, and leaves only a tombstone with the time, so that every
// later request, on this instance or a new one, is 410 and nothing
// recreates the tenant (migrate stops at the tombstone). The alarm is
// cleared and the directory forgets the tenant.

// tombstone is the one table an erased tenant keeps.
const tombstone = "stile_tombstone"

func (t *Tenant) erase(c *call, raw string) (route, *api.Error) {
	q, refused := query(raw)
	if refused != nil {
		return nil, refused
	}
	for k := range q {
		if k != "confirm" {
			return nil, api.Refuse(api.CodeInvalidRequest, "unknown query parameter %q: use confirm", k)
		}
	}
	if q["confirm"] != t.name {
		return nil, api.Refuse(api.CodeInvalidRequest, "erasing deletes every row of tenant %s and cannot be undone: repeat its name, ?confirm=%s", t.name, t.name)
	}
	return func(now int64) (result, error) {
		rows, err := t.db.Query(`SELECT type, name FROM sqlite_master
			WHERE type IN ('trigger', 'view', 'table') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name NOT LIKE '\_cf\_%' ESCAPE '\'
			ORDER BY CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1 ELSE 2 END, name`)
		if err != nil {
			return result{}, printf.Errorf("list the tenant's tables: %w", err)
		}
		type object struct{ kind, name string }
		var objects []object
		for rows.Next() {
			objects = append(objects, object{rows.Text(0), rows.Text(1)})
		}
		if err := rows.Err(); err != nil {
			return result{}, err
		}
		// Tables refer to each other; their order must not matter.
		if err := t.db.Exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
			return result{}, printf.Errorf("erase tenant %s: %w", t.name, err)
		}
		for _, o := range objects {
			if err := t.db.Exec(`DROP ` + strings.ToUpper(o.kind) + ` IF EXISTS "` + strings.ReplaceAll(o.name, `"`, `""`) + `"`); err != nil {
				return result{}, printf.Errorf("erase tenant %s: drop %s %s: %w", t.name, o.kind, o.name, err)
			}
		}
		if err := t.db.Exec(`CREATE TABLE ` + tombstone + ` (erased_at INTEGER NOT NULL) STRICT`); err != nil {
			return result{}, printf.Errorf("erase tenant %s: %w", t.name, err)
		}
		if err := t.db.Exec(`INSERT INTO `+tombstone+` (erased_at) VALUES (?)`, now); err != nil {
			return result{}, printf.Errorf("erase tenant %s: %w", t.name, err)
		}
		c.erasing = true
		return result{status: statusOK, body: api.Erased{Tenant: t.name, ErasedAt: ts(now), Dropped: len(objects)}.AppendJSON}, nil
	}, nil
}

// readTombstone tells whether the tenant was erased, and when.
// hasLedger reports whether the tenant's storage holds the migration
// ledger: whether the tenant was ever created. It only reads.
func (t *Tenant) hasLedger() (bool, error) {
	rows, err := t.db.Query(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, schema.Ledger)
	if err != nil {
		return false, printf.Errorf("look for the tenant's migration ledger: %w", err)
	}
	found := rows.Next()
	return found, rows.Err()
}

func (t *Tenant) readTombstone() (bool, error) {
	rows, err := t.db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?`, tombstone)
	if err != nil {
		return false, printf.Errorf("look for the tenant's tombstone: %w", err)
	}
	if !rows.Next() {
		return false, rows.Err()
	}
	rows, err = t.db.Query(`SELECT erased_at FROM ` + tombstone)
	if err != nil {
		return false, printf.Errorf("read the tenant's tombstone: %w", err)
	}
	if rows.Next() {
		t.life.erasedAt = rows.Int(0)
	}
	return true, rows.Err()
}

// erasedResponse answers every request of an erased tenant: 410 to the
// API, and nothing to do for an alarm; either clears the alarm.
func (t *Tenant) erasedResponse(req do.Request) do.Response {
	if req.Kind == do.KindAlarm {
		return do.Response{Status: statusOK, AlarmAt: 0}
	}
	e := api.Refuse(api.CodeErased, "tenant %s was erased at %s: nothing of it is kept, and nothing recreates it", t.name, ts(t.life.erasedAt).Format("2006-01-02T15:04:05.000Z07:00"))
	resp := errorResponse(e)
	resp.AlarmAt = 0
	return resp
}

// erasedNote tells the directory to forget the tenant.
func (t *Tenant) erasedNote() do.Header {
	n := api.DirectoryNote{Tenant: t.name, Erased: true}
	return do.Header{Name: do.HeaderDirectory, Value: string(n.AppendJSON(nil))}
}

// createTenant answers PUT /v1/t/{tenant}: the request's admission created
// the tenant (its migrations ran) when it did not exist.
func (t *Tenant) createTenant(c *call) route {
	return func(int64) (result, error) {
		created := c.creating // admit decided it after the route matched
		status := statusOK
		if created {
			status = statusCreated
		}
		return result{status: status, body: api.TenantCreated{Tenant: t.name, Created: created}.AppendJSON}, nil
	}
}
