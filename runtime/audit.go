package runtime

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// The audit list: each operator action that committed, with the role and
// token id its host verified (api.Route.Audited), written in the action's
// own transaction.

// auditLimit is how many entries GET /audit lists, newest first.
const auditLimit = 200

func (t *Tenant) audit(c *call, status int) error {
	req := c.req
	role := req.Headers.Get(do.HeaderPrincipal)
	if role == "" {
		role = string(api.RoleAdmin)
	}
	id := req.Headers.Get(do.HeaderTokenID)
	if err := t.db.Exec(`INSERT INTO stile_audit (at, role, token_id, route, path, status) VALUES (?, ?, ?, ?, ?, ?)`,
		c.now, role, id, c.route.Method+" "+c.route.Pattern, req.Path, status); err != nil {
		return printf.Errorf("record the operator action: %w", err)
	}
	return nil
}

func (t *Tenant) listAudit() route {
	return func(int64) (result, error) {
		rows, err := t.db.Query(`SELECT id, at, role, token_id, route, path, status FROM stile_audit ORDER BY id DESC` + do.Limit(auditLimit))
		if err != nil {
			return result{}, printf.Errorf("read the audit list: %w", err)
		}
		resp := api.AuditResponse{Entries: []api.AuditEntry{}}
		for rows.Next() {
			resp.Entries = append(resp.Entries, api.AuditEntry{ID: rows.Int(0), At: ts(rows.Int(1)), Role: api.Role(rows.Text(2)),
				TokenID: rows.Text(3), Route: rows.Text(4), Path: rows.Text(5), Status: int(rows.Int(6))})
		}
		return result{status: statusOK, body: resp.AppendJSON}, rows.Err()
	}
}
