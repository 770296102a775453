package runtime

import (
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/retention"
)

// Export and import (GET /export, POST /import; admin). An export is pages
// of rows of every table of the tenant, Stile's and the module's, each
// page read in one transaction; a cursor carries the table and the last
// key read, and the mark the first page set: events and jobs after it are
// left out, and checkpoints past it are set back to it, so that nothing an
// import holds is skipped. Left out too: the migration ledgers (the
// importing module's migrations make the schema; the versions must match)
// and the storage counters (the import's own writes count themselves).

// Bounds of an export page: well under the 10 MiB request body limit, so
// a page can be imported as it is.
// A page holds whole chunks of rows, so it passes ?limit_bytes= by up to
// a chunk.
const (
	exportPageBytes = 4 << 20
	exportChunkRows = 100
)

// notExported are tables an export leaves out. Snapshots are among them:
// one may fold events past the export's mark, and the imported tenant's
// commands keep new ones. So is usage: it is what this object cost, and
// the imported tenant's object starts its own.
var notExported = map[string]bool{"stile_storage": true, "stile_migrations": true, AppLedger: true,
	"stile_migration_failures": true, tombstone: true, "stile_snapshots": true, "stile_usage": true}

// bounded names the column of a table that the mark bounds: an event
// sequence number or a job id.
var bounded = map[string][2]string{
	"stile_events": {"seq", "event"}, "stile_inbox": {"seq", "event"},
	"stile_jobs": {"id", "job"}, "stile_job_attempts": {"job_id", "job"}, "stile_job_rejections": {"job_id", "job"},
	"stile_job_deps": {"child_id", "job"},
}

// clamped are checkpoints set back to the event mark.
var clamped = map[string]string{"stile_reactions": "checkpoint", "stile_projection_generations": "checkpoint"}

type exportTable struct {
	name    string
	columns []string
	keys    []string // the paging key: rowid, or the primary key of a WITHOUT ROWID table
}

// exportTables lists the tables to export, each after the tables its
// foreign keys name.
func (t *Tenant) exportTables() ([]exportTable, error) {
	rows, err := t.db.Query(`SELECT name, sql FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name NOT LIKE '\_cf\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, printf.Errorf("list the tenant's tables: %w", err)
	}
	type found struct{ name, sql string }
	var all []found
	for rows.Next() {
		if name := rows.Text(0); !notExported[name] {
			all = append(all, found{name, rows.Text(1)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	tables := map[string]*exportTable{}
	parents := map[string][]string{}
	var names []string
	for _, f := range all {
		tb := &exportTable{name: f.name}
		info, err := t.db.Query(`PRAGMA table_info(` + quoteIdent(f.name) + `)`)
		if err != nil {
			return nil, printf.Errorf("read the columns of %s: %w", f.name, err)
		}
		type pk struct {
			n    int64
			name string
		}
		var pks []pk
		for info.Next() {
			tb.columns = append(tb.columns, info.Text(1))
			if n := info.Int(5); n > 0 {
				pks = append(pks, pk{n, info.Text(1)})
			}
		}
		if err := info.Err(); err != nil {
			return nil, err
		}
		tb.keys = []string{"rowid"}
		if strings.Contains(strings.ToUpper(f.sql), "WITHOUT ROWID") {
			tb.keys = make([]string, len(pks))
			for _, p := range pks {
				tb.keys[p.n-1] = p.name
			}
		}
		fks, err := t.db.Query(`PRAGMA foreign_key_list(` + quoteIdent(f.name) + `)`)
		if err != nil {
			return nil, printf.Errorf("read the foreign keys of %s: %w", f.name, err)
		}
		for fks.Next() {
			if p := fks.Text(2); p != f.name {
				parents[f.name] = append(parents[f.name], p)
			}
		}
		if err := fks.Err(); err != nil {
			return nil, err
		}
		tables[f.name] = tb
		names = append(names, f.name)
	}
	var out []exportTable
	placed := map[string]bool{}
	for len(out) < len(names) {
		progress := false
		for _, n := range names {
			if placed[n] {
				continue
			}
			ready := true
			for _, p := range parents[n] {
				if !placed[p] && tables[p] != nil {
					ready = false
				}
			}
			if ready {
				placed[n], progress = true, true
				out = append(out, *tables[n])
			}
		}
		if !progress {
			return nil, printf.Errorf("the tenant's tables refer to each other in a cycle: they cannot be exported in an order an import accepts")
		}
	}
	return out, nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// exportCursor is where the next page starts.
type exportCursor struct {
	mark  api.ExportMark
	table string
	after []api.Cell // the last key read; nil: the table's start
}

func (c exportCursor) encode() string {
	cells := []api.Cell{{Kind: api.CellText, Text: c.table}, {Kind: api.CellInt, Int: c.mark.EventSeq},
		{Kind: api.CellInt, Int: c.mark.JobID}, {Kind: api.CellInt, Int: c.mark.At.UnixMilli()}}
	return base64.RawURLEncoding.EncodeToString(api.AppendCells(nil, append(cells, c.after...)))
}

func decodeCursor(s string) (exportCursor, *api.Error) {
	bad := api.Refuse(api.CodeInvalidRequest, "cursor %q is not one this export gave: pass the next of the page before, or none to start", s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return exportCursor{}, bad
	}
	rows, err := api.DecodeRows(append(append([]byte("["), b...), ']'), -1)
	if err != nil || len(rows) != 1 || len(rows[0]) < 4 || rows[0][0].Kind != api.CellText {
		return exportCursor{}, bad
	}
	r := rows[0]
	c := exportCursor{table: r[0].Text, mark: api.ExportMark{EventSeq: r[1].Int, JobID: r[2].Int, At: ts(r[3].Int)}}
	if len(r) > 4 {
		c.after = r[4:]
	}
	return c, nil
}

func (t *Tenant) export(raw string) (route, *api.Error) {
	q, refused := query(raw)
	if refused != nil {
		return nil, refused
	}
	var cur exportCursor
	first := true
	limit := exportPageBytes
	for k, v := range q {
		switch k {
		case "cursor":
			if cur, refused = decodeCursor(v); refused != nil {
				return nil, refused
			}
			first = false
		case "limit_bytes":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1024 || n > exportPageBytes {
				return nil, api.Refuse(api.CodeInvalidRequest, "limit_bytes %q must be a number within 1024-%d", v, exportPageBytes)
			}
			limit = n
		default:
			return nil, api.Refuse(api.CodeInvalidRequest, "unknown query parameter %q: use cursor and limit_bytes", k)
		}
	}
	return func(now int64) (result, error) {
		if first {
			seq, err := t.events.Head()
			if err != nil {
				return result{}, err
			}
			rows, err := t.db.Query(`SELECT COALESCE(MAX(id), 0) FROM stile_jobs`)
			if err != nil {
				return result{}, printf.Errorf("read the last job: %w", err)
			}
			rows.Next()
			cur.mark = api.ExportMark{EventSeq: seq, JobID: rows.Int(0), At: ts(now)}
		}
		page, err := t.exportPage(cur, first, limit)
		if err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: page.AppendJSON}, nil
	}, nil
}

func (t *Tenant) exportPage(cur exportCursor, first bool, limit int) (api.ExportPage, error) {
	page := api.ExportPage{Format: api.ExportFormat, Tenant: t.name, Mark: cur.mark, StileSchema: t.schema.stile.Version,
		ModuleSchema: t.schema.app.Version, First: first, Tables: []api.ExportTable{}}
	tables, err := t.exportTables()
	if err != nil {
		return page, err
	}
	start := 0
	if cur.table != "" {
		start = -1
		for i, tb := range tables {
			if tb.name == cur.table {
				start = i
			}
		}
		if start < 0 {
			return page, api.Refuse(api.CodeInvalidRequest, "the export's cursor names table %s, which this tenant does not have: start the export again", cur.table)
		}
	}
	size := 0
	for i := start; i < len(tables); i++ {
		tb := tables[i]
		after := []api.Cell(nil)
		if i == start {
			after = cur.after
		}
		out := api.ExportTable{Name: tb.name, Columns: tb.columns, First: after == nil}
		var rowsJSON []byte
		for {
			chunk, last, n, err := t.exportChunk(tb, cur.mark, after, limit-size)
			if err != nil {
				return page, err
			}
			if n > 0 {
				if len(rowsJSON) > 0 {
					rowsJSON = append(rowsJSON, ',')
				}
				rowsJSON = append(rowsJSON, chunk...)
				size += len(chunk)
				after = last
			}
			if size >= limit {
				out.Rows = append(append([]byte("["), rowsJSON...), ']')
				page.Tables = append(page.Tables, out)
				page.Next = exportCursor{mark: cur.mark, table: tb.name, after: after}.encode()
				return page, nil
			}
			if n < exportChunkRows {
				break // the table is done
			}
		}
		out.Rows = append(append([]byte("["), rowsJSON...), ']')
		page.Tables = append(page.Tables, out)
		if size >= limit && i+1 < len(tables) {
			page.Next = exportCursor{mark: cur.mark, table: tables[i+1].name}.encode()
			return page, nil
		}
	}
	return page, nil
}

// exportChunk reads up to exportChunkRows rows of tb after the key after,
// as comma-separated JSON rows, with the last row's key; it stops after
// the row that takes the JSON past budget bytes.
func (t *Tenant) exportChunk(tb exportTable, mark api.ExportMark, after []api.Cell, budget int) ([]byte, []api.Cell, int, error) {
	var sql strings.Builder
	sql.WriteString("SELECT ")
	for _, k := range tb.keys {
		sql.WriteString(quoteIdent(k) + ", ")
	}
	for i, c := range tb.columns {
		if i > 0 {
			sql.WriteString(", ")
		}
		if clamped[tb.name] == c {
			sql.WriteString("MIN(" + quoteIdent(c) + ", " + strconv.FormatInt(mark.EventSeq, 10) + ")")
			continue
		}
		sql.WriteString(quoteIdent(c))
	}
	sql.WriteString(" FROM " + quoteIdent(tb.name) + " WHERE 1")
	var args []any
	if after != nil {
		sql.WriteString(" AND (" + strings.Join(quoteAll(tb.keys), ", ") + ") > (" + strings.TrimSuffix(strings.Repeat("?, ", len(after)), ", ") + ")")
		for _, c := range after {
			args = append(args, cellArg(c))
		}
	}
	if b, ok := bounded[tb.name]; ok {
		limit := mark.JobID
		if b[1] == "event" {
			limit = mark.EventSeq
		}
		sql.WriteString(" AND " + quoteIdent(b[0]) + " <= " + strconv.FormatInt(limit, 10))
	}
	sql.WriteString(" ORDER BY " + strings.Join(quoteAll(tb.keys), ", ") + do.Limit(exportChunkRows))
	rows, err := t.db.Query(sql.String(), args...)
	if err != nil {
		return nil, nil, 0, printf.Errorf("export table %s: %w", tb.name, err)
	}
	var out []byte
	var last []api.Cell
	n := 0
	nk := len(tb.keys)
	cells := make([]api.Cell, len(tb.columns))
	for rows.Next() {
		if n > 0 {
			out = append(out, ',')
		}
		last = make([]api.Cell, nk)
		for i := range nk {
			last[i] = cellOf(rows.Value(i))
		}
		for i := range cells {
			cells[i] = cellOf(rows.Value(nk + i))
		}
		out = api.AppendCells(out, cells)
		n++
		if len(out) >= budget {
			break
		}
	}
	return out, last, n, rows.Err()
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoteIdent(n)
	}
	return out
}

func cellOf(v do.Value) api.Cell {
	switch v.Kind {
	case do.KindInt:
		return api.Cell{Kind: api.CellInt, Int: v.Int}
	case do.KindFloat:
		return api.Cell{Kind: api.CellReal, Real: v.Float}
	case do.KindText:
		return api.Cell{Kind: api.CellText, Text: string(v.Bytes)}
	case do.KindBlob:
		return api.Cell{Kind: api.CellBlob, Text: string(v.Bytes)}
	}
	return api.Cell{Kind: api.CellNull}
}

func cellArg(c api.Cell) any {
	switch c.Kind {
	case api.CellInt:
		return c.Int
	case api.CellReal:
		return c.Real
	case api.CellText:
		return c.Text
	case api.CellBlob:
		return []byte(c.Text)
	}
	return nil
}

// Settings of imports: the mark of the export being imported (an import
// under way), the tables its pages wrote to so far (a JSON list, what an
// abort empties), and whether the module's own tables were written by
// anything but its migrations (a registered transaction or an import),
// which makes the tenant no import's.
const (
	settingImport       = "import"
	settingImportTables = "import_tables"
	settingModuleWrites = "module_writes"
)

// importServes says whether a request is served while an import holds
// the tenant: the import's own pages and abort, GET /status, an erase.
func (t *Tenant) importServes(c *call) bool {
	r := c.route
	return c.req.Kind == do.KindAPI && (r == api.RouteImport || r == api.RouteAbortImport || r == api.RouteStatus || r == api.RouteErase)
}

// noteModuleWrite records, once, that the module's own tables were
// written by a registered transaction.
func (t *Tenant) noteModuleWrite(now int64) error {
	if _, ok, err := t.setting(settingModuleWrites); ok || err != nil {
		return err
	}
	return t.setSetting(now, settingModuleWrites, "transaction")
}

func markKey(m api.ExportMark) string {
	return printf.Sprintf("%d.%d.%d", m.EventSeq, m.JobID, m.At.UnixMilli())
}

func (t *Tenant) importPage(c *call, body []byte) (route, *api.Error) {
	page, err := api.DecodeExportPage(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if page.Format != api.ExportFormat {
		return nil, api.Refuse(api.CodeInvalidRequest, "format %q is not %s: send a page of GET /export", page.Format, api.ExportFormat)
	}
	type decoded struct {
		t    api.ExportTable
		rows [][]api.Cell
	}
	var tables []decoded
	for _, tb := range page.Tables {
		rows, err := api.DecodeRows(tb.Rows, len(tb.Columns))
		if err != nil {
			return nil, api.Refuse(api.CodeInvalidJSON, "table %s: %s", tb.Name, err.Error())
		}
		if len(tb.Columns) == 0 || len(tb.Columns) > 100 {
			return nil, api.Refuse(api.CodeInvalidRequest, "table %s has %d columns: an import takes 1-100", tb.Name, len(tb.Columns))
		}
		tables = append(tables, decoded{tb, rows})
	}
	return func(now int64) (result, error) {
		if page.StileSchema != t.schema.stile.Version || page.ModuleSchema != t.schema.app.Version {
			return result{}, api.Refuse(api.CodeImportConflict, "the export's tables are at versions %d (Stile's) and %d (the module's), and this tenant's at %d and %d: import with the module that exported", page.StileSchema, page.ModuleSchema, t.schema.stile.Version, t.schema.app.Version)
		}
		key := markKey(page.Mark)
		under, _, err := t.setting(settingImport)
		if err != nil {
			return result{}, err
		}
		switch {
		case page.First && under == "":
			if held, err := t.holdsWork(); err != nil {
				return result{}, err
			} else if held {
				return result{}, api.Refuse(api.CodeImportConflict, "tenant %s holds jobs, events, deliveries, commands or audit entries: an import goes into an empty tenant (erase it, or import into another name)", t.name)
			}
			if by, ok, err := t.setting(settingModuleWrites); err != nil {
				return result{}, err
			} else if ok {
				return result{}, api.Refuse(api.CodeImportConflict, "tenant %s's own tables hold rows written by its module (by a %s): an import goes into an empty tenant (erase it, or import into another name)", t.name, by)
			}
		case page.First:
			return result{}, api.Refuse(api.CodeImportConflict, "an import of another export (mark %s) is under way in tenant %s: finish it with its pages", under, t.name)
		case under != key:
			return result{}, api.Refuse(api.CodeImportConflict, "this page belongs to the export with mark %s, and the import under way in tenant %s is %q: import the pages in order, from the first", key, t.name, under)
		}
		touched, err := t.importTables()
		if err != nil {
			return result{}, err
		}
		written := 0
		for _, tb := range tables {
			n, err := t.importTable(tb.t, tb.rows)
			if err != nil {
				return result{}, err
			}
			written += n
			if name := strings.ToLower(tb.t.Name); !slices.Contains(touched, name) {
				touched = append(touched, name)
			}
		}
		if err := t.endImportPage(c, now, key, touched, page.Next == ""); err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: api.ImportResult{Rows: written, Done: page.Next == ""}.AppendJSON}, nil
	}, nil
}

// importTables reads the tables the import under way wrote to.
func (t *Tenant) importTables() ([]string, error) {
	v, ok, err := t.setting(settingImportTables)
	if err != nil || !ok {
		return nil, err
	}
	names, err := jsonwire.DecodeStrings([]byte(v))
	if err != nil {
		return nil, printf.Errorf("read the tables of the import under way: %w", err)
	}
	return names, nil
}

// endImportPage records where the import stands after a page: under way
// with the tables it wrote to, or done (the tenant holds the module's
// rows if it wrote any: no import goes over them).
func (t *Tenant) endImportPage(c *call, now int64, key string, touched []string, done bool) error {
	if !done {
		if err := t.setSetting(now, settingImportTables, string(jsonwire.AppendStrings(nil, touched))); err != nil {
			return err
		}
		if err := t.setSetting(now, settingImport, key); err != nil {
			return err
		}
		c.importBegun = key
		return nil
	}
	for _, k := range []string{settingImport, settingImportTables} {
		if err := t.clearSetting(k); err != nil {
			return err
		}
	}
	c.importDone = true
	for _, name := range touched {
		if !strings.HasPrefix(name, "stile_") {
			// The exported tenant's own mark came along, if it had one.
			if _, ok, err := t.setting(settingModuleWrites); ok || err != nil {
				return err
			}
			return t.setSetting(now, settingModuleWrites, "import")
		}
	}
	return nil
}

// abortImport is DELETE /import: every table the import under way wrote
// to is emptied, the tenant's identity drawn again if it was imported,
// and the tenant is free again; what the module's migrations put in a
// table the import wrote to is not put back.
func (t *Tenant) abortImport(c *call) route {
	return func(now int64) (result, error) {
		under, _, err := t.setting(settingImport)
		if err != nil {
			return result{}, err
		}
		if under == "" {
			return result{}, api.Refuse(api.CodeImportConflict, "no import is under way in tenant %s", t.name)
		}
		touched, err := t.importTables()
		if err != nil {
			return result{}, err
		}
		if err := t.db.Exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
			return result{}, printf.Errorf("abort the import of tenant %s: %w", t.name, err)
		}
		for _, name := range touched {
			if err := t.emptyTable(name); err != nil {
				return result{}, printf.Errorf("abort the import of tenant %s: %w", t.name, err)
			}
		}
		if slices.Contains(touched, "stile_identity") {
			if err := t.db.Exec(`INSERT INTO stile_identity (id) VALUES (lower(hex(randomblob(16))))`); err != nil {
				return result{}, printf.Errorf("abort the import of tenant %s: %w", t.name, err)
			}
		}
		for _, k := range []string{settingImport, settingImportTables, settingModuleWrites} {
			if err := t.clearSetting(k); err != nil {
				return result{}, err
			}
		}
		c.importDone = true
		if touched == nil {
			touched = []string{}
		}
		return result{status: statusOK, body: api.ImportAborted{Tenant: t.name, Tables: touched}.AppendJSON}, nil
	}
}

// emptyTable deletes a table's rows for an import; emptying the event
// log sets its storage count back too (retention.CountEvents).
func (t *Tenant) emptyTable(name string) error {
	if err := t.db.Exec(`DELETE FROM ` + quoteIdent(name)); err != nil {
		return printf.Errorf("empty table %s: %w", name, err)
	}
	if strings.EqualFold(name, "stile_events") {
		return retention.ForgetEvents(t.db)
	}
	return nil
}

// holdsWork says whether the tenant holds any row of the kinds an export
// carries as its work: jobs (their attempts and refused reports go with
// them), events, deliveries, commands, scheduled commands, audit entries.
func (t *Tenant) holdsWork() (bool, error) {
	rows, err := t.db.Query(`SELECT EXISTS (SELECT 1 FROM stile_jobs) OR EXISTS (SELECT 1 FROM stile_events)
		OR EXISTS (SELECT 1 FROM stile_inbox) OR EXISTS (SELECT 1 FROM stile_commands)
		OR EXISTS (SELECT 1 FROM stile_scheduled_commands) OR EXISTS (SELECT 1 FROM stile_audit)`)
	if err != nil {
		return false, printf.Errorf("look for the tenant's rows: %w", err)
	}
	rows.Next()
	return rows.Int(0) != 0, rows.Err()
}

func (t *Tenant) importTable(tb api.ExportTable, rows [][]api.Cell) (int, error) {
	// SQLite's names are not case-sensitive: STILE_MIGRATIONS is the
	// migration ledger.
	lower := strings.ToLower(tb.Name)
	if notExported[lower] || strings.HasPrefix(lower, "sqlite_") || strings.HasPrefix(lower, "_cf_") {
		return 0, api.Refuse(api.CodeInvalidRequest, "table %s is not imported: an export never holds it", tb.Name)
	}
	if check := importChecks[lower]; check != nil {
		cols := make(map[string]int, len(tb.Columns))
		for i, c := range tb.Columns {
			cols[strings.ToLower(c)] = i
		}
		for i, row := range rows {
			if msg := check(t, importedRow{cols: cols, cells: row}); msg != "" {
				return 0, api.Refuse(api.CodeImportConflict, "row %d of table %s: %s", i, tb.Name, msg)
			}
		}
	}
	info, err := t.db.Query(`PRAGMA table_info(` + quoteIdent(tb.Name) + `)`)
	if err != nil {
		return 0, printf.Errorf("read the columns of %s: %w", tb.Name, err)
	}
	have := map[string]bool{}
	for info.Next() {
		have[info.Text(1)] = true
	}
	if err := info.Err(); err != nil {
		return 0, err
	}
	if len(have) == 0 {
		return 0, api.Refuse(api.CodeImportConflict, "this tenant has no table %s: import with the module that exported", tb.Name)
	}
	for _, c := range tb.Columns {
		if !have[c] {
			return 0, api.Refuse(api.CodeImportConflict, "table %s of this tenant has no column %s: import with the module that exported", tb.Name, c)
		}
	}
	if tb.First {
		// What migrating this tenant seeded (its identity, checkpoints,
		// settings) gives way to the export's.
		if err := t.emptyTable(tb.Name); err != nil {
			return 0, err
		}
	}
	sql := `INSERT INTO ` + quoteIdent(tb.Name) + ` (` + strings.Join(quoteAll(tb.Columns), ", ") + `) VALUES (` +
		strings.TrimSuffix(strings.Repeat("?, ", len(tb.Columns)), ", ") + `)`
	args := make([]any, len(tb.Columns))
	for i, row := range rows {
		for j, c := range row {
			args[j] = cellArg(c)
		}
		if err := t.db.Exec(sql, args...); err != nil {
			var se *do.SQLError
			if errors.As(err, &se) {
				return 0, api.Refuse(api.CodeImportConflict, "row %d of table %s: %s", i, tb.Name, se.Msg)
			}
			return 0, printf.Errorf("import row %d of table %s: %w", i, tb.Name, err)
		}
	}
	return len(rows), nil
}
