package runtime

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/ascii"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/fencestore"
	"github.com/stile-run/stile/schema"
)

// TxFunc is a registered transaction: Go code in the module that writes
// the module's own tables and enqueues jobs in one storage transaction
// (POST /v1/t/{tenant}/tx/{name}). If it returns an error, or panics,
// nothing it did is kept: no row, no job. Its output is answered as JSON.
type TxFunc func(tx *Tx, input json.RawMessage) (output any, err error)

// encodedTx is a TxFunc whose output is already JSON.
type encodedTx func(tx *Tx, input json.RawMessage) (json.RawMessage, error)

// Tx is a registered transaction's view of the tenant's storage.
type Tx struct {
	t   *Tenant
	now int64
}

// ErrStileTables refuses a transaction's SQL that names Stile's own tables.
var ErrStileTables = errors.New("a transaction may not touch Stile's tables (stile_*): enqueue with tx.Enqueue")

func guard(sql string) error {
	if strings.Contains(ascii.ToLower(sql), "stile_") {
		return ErrStileTables
	}
	return nil
}

// Exec runs a statement on the module's tables.
func (tx *Tx) Exec(sql string, args ...any) error {
	if err := guard(sql); err != nil {
		return err
	}
	return tx.t.db.Exec(sql, args...)
}

// Query runs a query on the module's tables. The rows are valid until the
// next statement.
func (tx *Tx) Query(sql string, args ...any) (*do.Rows, error) {
	if err := guard(sql); err != nil {
		return nil, err
	}
	return tx.t.db.Query(sql, args...)
}

// Now is the transaction's time (the host's clock, fixed for the request).
func (tx *Tx) Now() time.Time { return ts(tx.now) }

// Enqueue enqueues a job in the transaction, validated as the API
// validates one; it is kept only if the transaction commits.
func (tx *Tx) Enqueue(r api.EnqueueRequest) (api.Job, error) {
	n, e := tx.t.validateEnqueue(-1, r)
	if e != nil {
		return api.Job{}, e
	}
	if n.RunAt == 0 {
		n.RunAt = tx.now
	}
	js, err := tx.t.store.Enqueue(tx.now, []fencestore.NewJob{n})
	if err != nil {
		return api.Job{}, err
	}
	v := jobView(js[0].Job)
	v.Existing = js[0].Existing
	return v, nil
}

// EnqueueArgs enqueues the job of typed args (api.JobArgs) in the
// transaction, as Enqueue does, with the options set in opts (its Kind and
// Args empty).
func (tx *Tx) EnqueueArgs(args api.JobArgs, opts api.EnqueueRequest) (api.Job, error) {
	r, err := api.EnqueueOf(args, opts)
	if err != nil {
		return api.Job{}, api.Refuse(api.CodeInvalidArgs, "%s", err.Error())
	}
	return tx.Enqueue(r)
}

// RegisterTx adds a transaction. It panics on an invalid or duplicate name.
func (a *App) RegisterTx(name string, fn TxFunc) *App {
	if !api.ValidName(name) {
		panic(printf.Sprintf("stile: transaction name %q is invalid: use %s", name, api.NameRule))
	}
	if _, dup := a.txs[name]; dup {
		panic(printf.Sprintf("stile: transaction %q is registered twice", name))
	}
	if fn == nil {
		panic(printf.Sprintf("stile: transaction %q has no function", name))
	}
	// The output is encoded here, at registration, so that a module that
	// registers no transaction does not carry encoding/json's encoder.
	a.txs[name] = func(tx *Tx, input json.RawMessage) (json.RawMessage, error) {
		out, err := fn(tx, input)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, printf.Errorf("encode its output: %w", err)
		}
		return b, nil
	}
	return a
}

// AppLedger is the table recording the module's own migrations.
const AppLedger = "app_migrations"

// Migrations sets the module's own schema: numbered migrations (1, 2, 3 …)
// applied on a tenant's first request after Stile's, each in its own
// transaction, recorded in app_migrations with their checksum and class.
// They should only add: a module rolled back keeps serving over additive
// migrations it predates, not over destructive ones (DROP, RENAME, a
// column dropped, rows deleted or rewritten), which must say so with
// Destructive: true. A migration that fails is recorded and retried on the
// tenant's next start or POST /migrations; until then registered
// transactions answer 503 migration_failed, and the rest serves. Table
// names must not start with stile_.
func (a *App) Migrations(ms ...schema.Migration) *App {
	for i, m := range ms {
		if m.Version != int64(i+1) {
			panic(printf.Sprintf("stile: migration %d is numbered %d; numbers must run 1, 2, 3 …", i+1, m.Version))
		}
		if strings.Contains(ascii.ToLower(m.SQL), "stile_") {
			panic(printf.Sprintf("stile: migration %d_%s names a stile_ table; those are Stile's", m.Version, m.Name))
		}
		if err := m.Check(); err != nil {
			panic("stile: " + err.Error())
		}
	}
	a.migrations = ms
	return a
}

func (t *Tenant) runTx(name string, body []byte) (route, *api.Error) {
	fn, ok := t.app.txs[name]
	if !ok {
		return nil, api.Refuse(api.CodeNotFound, "no transaction %q is registered in this module", name)
	}
	input := body
	if len(ascii.TrimSpace(string(input))) == 0 {
		input = []byte("null")
	}
	if !jsonwire.Valid(input) {
		return nil, api.Refuse(api.CodeInvalidJSON, "the transaction's input is not JSON")
	}
	return func(now int64) (result, error) {
		out, err := fn(&Tx{t: t, now: now}, input)
		if err != nil {
			// A refusal the transaction chose (a 4xx with a code) is
			// answered as it is; any other error is tx_failed. Either
			// way, nothing it wrote stays.
			var te *api.Error
			if errors.As(err, &te) && te.Status >= 400 && te.Status <= 499 && te.Code != "" {
				return result{}, &api.Error{Status: te.Status, Code: te.Code, Message: oneLine(te.Message)}
			}
			return result{}, api.Refuse(api.CodeTxFailed, "transaction %s failed and wrote nothing: %s", name, oneLine(err.Error()))
		}
		if err := t.noteModuleWrite(now); err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: api.TxResult{Result: out}.AppendJSON}, nil
	}, nil
}
