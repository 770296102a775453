package runtime

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/cron"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// An import writes rows, not requests: what the API would refuse could
// otherwise come in through it, and a row the module cannot read (a cron
// expression it cannot parse, a lease past any bound) breaks the tenant
// for every later request. So the rows of Stile's tables that the module
// acts on pass the checks their routes make; the others (histories, the
// audit, checkpoints) are only shown, and the tables' own constraints
// hold them.

// importedRow is one row of an import page, read by column name.
type importedRow struct {
	cols  map[string]int
	cells []api.Cell
}

func (r importedRow) cell(name string) (api.Cell, bool) {
	i, ok := r.cols[name]
	if !ok {
		return api.Cell{}, false
	}
	return r.cells[i], true
}

// text is a column's text ("" for NULL or a missing column).
func (r importedRow) text(name string) string {
	c, _ := r.cell(name)
	return c.Text
}

// Each check below looks at the columns a row has: a column left out takes
// its default, or fails the table's NOT NULL.

// textCheck is what is wrong with a column's text, if the row has it.
func (r importedRow) textCheck(name string, problem func(string) string) string {
	if c, ok := r.cell(name); ok && c.Kind != api.CellNull {
		return problem(c.Text)
	}
	return ""
}

// numCheck says a column's integer is outside lo-hi, if the row has it.
func (r importedRow) numCheck(name string, lo, hi int64) string {
	if c, ok := r.cell(name); ok && c.Kind != api.CellNull {
		return between(name, c.Int, lo, hi)
	}
	return ""
}

// firstProblem is the first of problems that is not "".
func firstProblem(problems ...string) string {
	for _, p := range problems {
		if p != "" {
			return p
		}
	}
	return ""
}

func nameProblem(what string) func(string) string {
	return func(v string) string {
		if !api.ValidName(v) {
			return printf.Sprintf("%s %q is invalid: use %s", what, v, api.NameRule)
		}
		return ""
	}
}

func jsonProblem(what string, max int) func(string) string {
	return func(v string) string {
		if len(v) > max || !jsonwire.Valid([]byte(v)) {
			return printf.Sprintf("%s is not JSON of at most %d bytes", what, max)
		}
		return ""
	}
}

// importChecks say what is wrong with an imported row of a table ("":
// nothing), in the words of the route that writes such rows.
var importChecks = map[string]func(t *Tenant, r importedRow) string{
	"stile_jobs":        checkImportedJob,
	"stile_schedules":   checkImportedSchedule,
	"stile_events":      checkImportedEvent,
	"stile_concurrency": checkImportedLimit,
	"stile_rates":       checkImportedRate,
	"stile_settings":    checkImportedSetting,
	"stile_queues": func(t *Tenant, r importedRow) string {
		return firstProblem(r.textCheck("name", nameProblem("queue")), queueProblem(t, r, "name", true))
	},
}

// queueProblem refuses a row whose queue (column col) would be one too
// many for the tenant (api.MaxQueues), as an enqueue or a pause would be;
// counts says the row counts (a finished job does not).
func queueProblem(t *Tenant, r importedRow, col string, counts bool) string {
	q := r.text(col)
	if !counts || !api.ValidName(q) {
		return ""
	}
	if err := t.store.AdmitQueue(q); err != nil {
		return err.Error()
	}
	return ""
}

func finishedState(s string) bool { return s == "completed" || s == "cancelled" || s == "dead" }

func between(what string, v, lo, hi int64) string {
	if v < lo || v > hi {
		return printf.Sprintf("%s %d is outside %d-%d", what, v, lo, hi)
	}
	return ""
}

func checkImportedJob(t *Tenant, r importedRow) string {
	return firstProblem(
		r.textCheck("kind", nameProblem("kind")),
		r.textCheck("queue", nameProblem("queue")),
		queueProblem(t, r, "queue", !finishedState(r.text("state"))),
		r.textCheck("concurrency_key", nameProblem("concurrency_key")),
		r.textCheck("rate_key", nameProblem("rate_key")),
		r.textCheck("debounce_key", nameProblem("debounce_key")),
		r.textCheck("throttle_key", nameProblem("throttle_key")),
		r.textCheck("all_args", func(v string) string {
			if p := jsonProblem("all_args", fencestore.MaxAllArgsBytes)(v); p != "" || v[0] != '[' {
				return printf.Sprintf("all_args is not a JSON array of at most %d bytes", fencestore.MaxAllArgsBytes)
			}
			return ""
		}),
		r.textCheck("unique_key", nameProblem("unique_key")),
		r.textCheck("args", jsonProblem("args", api.MaxArgsBytes)),
		r.textCheck("output", jsonProblem("output", api.MaxOutputBytes)),
		r.textCheck("progress", jsonProblem("progress", api.MaxProgressBytes)),
		r.textCheck("tags", func(v string) string {
			tags, err := jsonwire.DecodeStrings([]byte(v))
			if err != nil {
				return "tags are not a JSON array of strings"
			}
			if _, e := validTags("", tags); e != nil {
				return e.Message
			}
			return ""
		}),
		r.numCheck("lease_ms", api.MinLease.Milliseconds(), api.MaxLease.Milliseconds()),
		r.numCheck("timeout_ms", api.MinLease.Milliseconds(), api.MaxTimeout.Milliseconds()),
		r.numCheck("max_attempts", 1, api.MaxMaxAttempts),
		r.numCheck("backoff_ms", 1, maxTimeMs),
		r.numCheck("backoff_max_ms", 1, maxTimeMs),
		r.numCheck("run_at", 0, maxTimeMs),
		r.numCheck("created_at", 0, maxTimeMs),
		r.numCheck("claimed_at", 0, maxTimeMs),
		r.numCheck("lease_until", 0, maxTimeMs),
		r.numCheck("finished_at", 0, maxTimeMs),
	)
}

func checkImportedSchedule(t *Tenant, r importedRow) string {
	name := r.text("name")
	return firstProblem(
		r.textCheck("name", nameProblem("schedule name")),
		r.textCheck("cron", func(v string) string {
			if _, err := cron.Parse(v); err != nil {
				return err.Error()
			}
			return ""
		}),
		r.numCheck("next_at", 1, maxTimeMs),
		r.textCheck("job", func(v string) string {
			if _, e := t.scheduledJob(name, []byte(v), 1); e != nil {
				return "its job: " + e.Message
			}
			return ""
		}),
	)
}

func checkImportedEvent(_ *Tenant, r importedRow) string {
	return firstProblem(
		r.textCheck("stream", func(v string) string {
			if !api.ValidStream(v) {
				return printf.Sprintf("stream %q is invalid: use %s", v, api.NameRule)
			}
			return ""
		}),
		r.textCheck("type", nameProblem("type")),
		r.textCheck("data", jsonProblem("data", api.MaxEventBytes)),
		r.numCheck("at", 0, maxTimeMs),
	)
}

func checkImportedLimit(_ *Tenant, r importedRow) string {
	return firstProblem(r.textCheck("key", nameProblem("concurrency key")), r.numCheck("slots", 0, api.MaxSlots))
}

func checkImportedRate(_ *Tenant, r importedRow) string {
	return firstProblem(r.textCheck("key", nameProblem("rate key")), r.numCheck("max_starts", 1, flow.MaxLimit),
		r.numCheck("period_ms", flow.MinPeriodMs, flow.MaxPeriodMs),
		r.textCheck("starts", func(v string) string {
			// As the store writes it, byte for byte: a claim's guarded
			// write compares the text it read.
			if w, err := flow.Decode(v); err != nil || w.Encode() != v {
				return "starts is not a rate window as Stile writes it (\"at:n\" pairs, oldest first)"
			}
			return ""
		}))
}

// checkImportedSetting checks the settings the tenant reads when it
// starts; the import's own mark is the importing tenant's, never an
// export's.
func checkImportedSetting(_ *Tenant, r importedRow) string {
	switch key, v := r.text("key"), r.text("value"); key {
	case settingImport:
		return "the setting of an import under way is not imported"
	case settingRetention:
		ret, err := api.DecodeRetention([]byte(v))
		if err != nil {
			return "retention: " + err.Error()
		}
		if e := ret.Check(); e != nil {
			return "retention: " + e.Message
		}
	}
	return ""
}
