package e2e_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
)

// exportAll reads a tenant's whole export, limit bytes a page (0: the
// default).
func (s *scenario) exportAll(ten *client.Tenant, limit int) []api.ExportPage {
	s.t.Helper()
	var pages []api.ExportPage
	cursor := ""
	for {
		p, err := ten.ExportPage(s.ctx, cursor, limit)
		require.NoError(s.t, err)
		pages = append(pages, p)
		if p.Next == "" {
			return pages
		}
		require.Less(s.t, len(pages), 1000, "the export ends")
		cursor = p.Next
	}
}

// dump is an export as table → its rows, for comparing two tenants: the
// pages and the mark aside.
func dump(pages []api.ExportPage) map[string][]string {
	out := map[string][]string{}
	for _, p := range pages {
		for _, tb := range p.Tables {
			var rows []json.RawMessage
			if err := json.Unmarshal(tb.Rows, &rows); err != nil {
				panic(err)
			}
			key := tb.Name + "(" + strconv.Itoa(len(tb.Columns)) + ")"
			if _, ok := out[key]; !ok {
				out[key] = []string{}
			}
			for _, r := range rows {
				out[key] = append(out[key], string(r))
			}
		}
	}
	return out
}

// scenarioExportImport: a tenant with jobs in every state, events, a
// reaction's open delivery, a projection's rows and the module's own table
// is exported in small pages and imported into an empty tenant, whose own
// export is then the same, row for row, with the same idempotency keys;
// bad pages are refused and write nothing.
func scenarioExportImport(s *scenario) {
	t := s.t
	done := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"n":1}`), Tags: []string{"x"}})
	for _, c := range s.claim("w", 1, 1) {
		_, err := s.ten.Report(s.ctx, c.ID, completed(claimOf(c, "w"), `{"ok":"é✓"}`))
		require.NoError(t, err)
	}
	later := time.Now().Add(time.Hour)
	if p := s.tg.inProcess(); p != nil {
		later = time.UnixMilli(p.clock.Now()).Add(time.Hour)
	}
	scheduled := s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: &later, UniqueKey: "once"})
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", DependsOn: []string{scheduled.ID}})
	require.NoError(t, s.ten.Tx(s.ctx, "signup", map[string]string{"email": "ada@example.com", "name": "Ada"}, nil))
	for i := range 30 {
		s.note("n"+strconv.Itoa(i%3), testapp.NoteData{N: int64(i)})
	}
	s.createPayment("p1", 10)
	s.command(api.Command{ID: "rr", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	open := s.deliveries("w", 10, 1, testapp.RefundPolicy)[0]
	s.caughtUp(false)

	pages := s.exportAll(s.ten, 1024)
	require.Greater(t, len(pages), 2, "small pages: the export spans several")
	require.True(t, pages[0].First)
	for _, p := range pages {
		require.Equal(t, api.ExportFormat, p.Format)
		require.Equal(t, pages[0].Mark, p.Mark, "one mark bounds every page")
	}

	target := s.tg.client().Tenant(s.ten.Name() + "-copy")
	// Bad pages change nothing: a later page first, a malformed one, one
	// of another format.
	_, err := target.Import(s.ctx, pages[1])
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)
	status, out, err := s.tg.client().Raw(s.ctx, "POST", "/v1/t/"+target.Name()+"/import", []byte(`{"format":`), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, string(out))
	wrong := pages[0]
	wrong.Format = "csv"
	_, err = target.Import(s.ctx, wrong)
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	st, err := target.Storage(s.ctx)
	require.NoError(t, err)
	for _, k := range st.Kinds {
		require.Zero(t, k.Rows, "nothing was written: %s", k.Kind)
	}

	for i, p := range pages {
		res, err := target.Import(s.ctx, p)
		require.NoError(t, err, "page %d", i)
		require.Equal(t, i == len(pages)-1, res.Done)
	}
	_, err = target.Import(s.ctx, pages[0])
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)
	_, err = s.ten.Import(s.ctx, pages[0])
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)

	// In real time the open delivery's lease (a second) may run out while
	// the pages import, and each tenant notes that at its next request:
	// both are exported once it has run out, and say the same.
	if s.tg.realTime() {
		time.Sleep(time.Until(open.LeaseUntil) + 50*time.Millisecond)
	}
	require.Equal(t, dump(s.exportAll(s.ten, 0)), dump(s.exportAll(target, 0)), "the copy exports what the original does")
	j, err := target.Job(s.ctx, done.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":"é✓"}`, string(j.Output))
	res, err := target.Query(s.ctx, "note_totals", nil)
	require.NoError(t, err)
	require.Len(t, res.Rows, 3, "the projection's rows came along")

	// The open delivery, taken over in the copy, has the same key. (By
	// then the copy has looked at what is failing in it, which an import
	// changes, and told the directory.)
	s.tg.advance(t, max(reactionLease, api.FailingNoteDelay)+100*time.Millisecond)
	copied := &scenario{t: t, tg: s.tg, ctx: s.ctx, ten: target}
	again := copied.deliveries("w2", 10, 1, testapp.RefundPolicy)[0]
	require.Equal(t, open.Event.Seq, again.Event.Seq)
	require.Equal(t, open.IdempotencyKey, again.IdempotencyKey, "idempotency keys derive from the same storage id")
	// The copy's alarm follows what it holds: the delivery's new lease,
	// then the scheduled job.
	st2, err := target.Status(s.ctx)
	require.NoError(t, err)
	require.NotNil(t, st2.AlarmAt)
	require.Equal(t, again.LeaseUntil.UnixMilli(), st2.AlarmAt.UnixMilli())
	if p := s.tg.inProcess(); p != nil {
		require.Equal(t, again.LeaseUntil.UnixMilli(), p.manager.AlarmAt(target.Name()))
	}
}

// scenarioImportHoldsTheTenant: a multi-page import holds its tenant until
// its last page (other requests, even reads, get 409 import_conflict; its
// status and an abort are served); an abort empties what its pages wrote
// and frees the tenant, and the same export then imports whole. An import
// goes only into a tenant whose own tables nothing but migrations wrote;
// rows the API could not have written (a cron expression that breaks the
// module, a lease past any bound, Stile's migration ledger named in upper
// case) are refused and write nothing.
func scenarioImportHoldsTheTenant(s *scenario) {
	t := s.t
	for i := range 20 {
		s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)})
	}
	require.NoError(t, s.ten.Tx(s.ctx, "signup", map[string]string{"email": "ada@example.com", "name": "Ada"}, nil))
	pages := s.exportAll(s.ten, 1024)
	require.Greater(t, len(pages), 2)

	target := s.tg.client().Tenant(s.ten.Name() + "-copy")
	_, err := target.Import(s.ctx, pages[0])
	require.NoError(t, err)
	_, err = target.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo"})
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)
	require.Contains(t, err.Error(), "DELETE /v1/t/"+target.Name()+"/import")
	_, err = target.List(s.ctx, "", "", "", "", 10)
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)
	_, err = target.Status(s.ctx)
	require.NoError(t, err, "its status is served")

	aborted, err := target.AbortImport(s.ctx)
	require.NoError(t, err)
	require.Contains(t, aborted.Tables, "stile_jobs")
	_, err = target.AbortImport(s.ctx)
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)
	l, err := target.List(s.ctx, "", "", "", "", 10)
	require.NoError(t, err, "the tenant serves again")
	require.Empty(t, l.Jobs, "what the import wrote is gone")
	for i, p := range pages {
		res, err := target.Import(s.ctx, p)
		require.NoError(t, err, "page %d: the same export imports whole after the abort", i)
		require.Equal(t, i == len(pages)-1, res.Done)
	}
	l, err = target.List(s.ctx, "", "", "", "", 100)
	require.NoError(t, err)
	require.Len(t, l.Jobs, 21, "20 jobs and the signup's")

	// A tenant whose own table a transaction wrote to holds no Stile row,
	// yet no import goes over it.
	other := s.tg.client().Tenant(s.ten.Name() + "-tx")
	require.NoError(t, other.Tx(s.ctx, "account", map[string]string{"email": "bob@example.com", "name": "Bob"}, nil))
	_, err = other.Import(s.ctx, pages[0])
	requireCode(t, err, http.StatusConflict, api.CodeImportConflict)
	require.Contains(t, err.Error(), "written by its module")

	// Rows the API could not have written.
	fresh := s.tg.client().Tenant(s.ten.Name() + "-bad")
	one := func(table string, columns []string, row string) api.ExportPage {
		return api.ExportPage{Format: api.ExportFormat, First: true, StileSchema: pages[0].StileSchema,
			ModuleSchema: pages[0].ModuleSchema, Mark: pages[0].Mark,
			Tables: []api.ExportTable{{Name: table, Columns: columns, First: true, Rows: json.RawMessage(`[` + row + `]`)}}}
	}
	for _, bad := range []struct {
		name string
		page api.ExportPage
		want string
	}{
		{"cron step near 2^63", one("stile_schedules", []string{"name", "cron", "job", "next_at", "created_at", "updated_at"},
			`["s","*/9223372036854775807 * * * * *","{\"kind\":\"test.echo\"}",1,1,1]`), "step"},
		{"cron that never fires", one("stile_schedules", []string{"name", "cron", "job", "next_at", "created_at", "updated_at"},
			`["s","0 0 0 30 2 *","{\"kind\":\"test.echo\"}",1,1,1]`), "never fires"},
		{"schedule of an unknown kind", one("stile_schedules", []string{"name", "cron", "job", "next_at", "created_at", "updated_at"},
			`["s","@hourly","{\"kind\":\"nope\"}",1,1,1]`), "unknown job kind"},
		{"lease past any bound", one("stile_jobs", []string{"kind", "queue", "priority", "args", "state", "max_attempts", "lease_ms", "timeout_ms", "backoff_ms", "backoff_max_ms", "run_at", "created_at"},
			`["test.echo","default",0,"{}","available",3,9007199254740991,9007199254740991,1000,1000,1,1]`), "lease_ms"},
		{"event of a bad type", one("stile_events", []string{"stream", "version", "type", "data", "at"},
			`["s-1",1,"a b","{}",1]`), "type"},
		{"the migration ledger in upper case", one("STILE_MIGRATIONS", []string{"version"}, `[1]`), "not imported"},
	} {
		_, err := fresh.Import(s.ctx, bad.page)
		require.Error(t, err, bad.name)
		var ce *api.Error
		require.ErrorAs(t, err, &ce, bad.name)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusConflict}, ce.Status, bad.name)
		require.Contains(t, ce.Message, bad.want, bad.name)
	}
	st, err := fresh.Status(s.ctx)
	require.NoError(t, err, "the tenant serves: nothing broke it")
	require.Equal(t, st.StileSchema.Known, st.StileSchema.Version, "the migration ledger is whole")
	sc, err := fresh.Schedules(s.ctx)
	require.NoError(t, err)
	require.Empty(t, sc)
	l, err = fresh.List(s.ctx, "", "", "", "", 10)
	require.NoError(t, err)
	require.Empty(t, l.Jobs)
}
