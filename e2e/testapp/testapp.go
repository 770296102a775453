package testapp

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/schema"
)

// App registers the test kinds, transactions, the payment aggregate and
// its reactions.
func App() *runtime.App {
	return runtime.RegisterJobArgs[receipt.Receipt](registerOrders(registerProjections(registerPayments(runtime.NewApp()))), runtime.JobKind{}).
		ConcurrencyLimit("limited", 1).
		// One start an hour, by the module's default rate limit.
		RateLimit("hourly", 1, time.Hour).
		// A dead executor's push is replaced after 3 s (35 s by default),
		// and a refused one retried from 200 ms, so the executor tests wait
		// little.
		Pushes(runtime.PushPolicy{TTL: 3000, RetryMin: 200, RetryMax: 2000}).
		Migrations(schema.Migration{Version: 1, Name: "accounts",
			SQL: `CREATE TABLE accounts (email TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT`}).
		// Transactional enqueue: the welcome job is enqueued first; if the
		// account cannot be written (the email is taken), the job goes too.
		RegisterTx("signup", func(tx *runtime.Tx, input json.RawMessage) (any, error) {
			var in struct{ Email, Name string }
			if err := json.Unmarshal(input, &in); err != nil || in.Email == "" {
				return nil, &api.Error{Status: 400, Code: "invalid_signup", Message: "send {\"email\": …, \"name\": …}"}
			}
			job, err := tx.Enqueue(api.EnqueueRequest{Kind: "test.echo", Args: input, Tags: []string{"welcome"}})
			if err != nil {
				return nil, err
			}
			if err := tx.Exec(`INSERT INTO accounts (email, name) VALUES (?, ?)`, in.Email, in.Name); err != nil {
				return nil, err
			}
			return map[string]string{"job_id": job.ID}, nil
		}).
		// An enqueue in a transaction, as its input says (debounce and
		// throttle work there as at the API).
		RegisterTx("enqueue", func(tx *runtime.Tx, input json.RawMessage) (any, error) {
			var r api.EnqueueRequest
			if err := json.Unmarshal(input, &r); err != nil {
				return nil, &api.Error{Status: 400, Code: "invalid_enqueue", Message: err.Error()}
			}
			return tx.Enqueue(r)
		}).
		// An account alone: the module's own table, no Stile row.
		RegisterTx("account", func(tx *runtime.Tx, input json.RawMessage) (any, error) {
			var in struct{ Email, Name string }
			if err := json.Unmarshal(input, &in); err != nil || in.Email == "" {
				return nil, &api.Error{Status: 400, Code: "invalid_account", Message: "send {\"email\": …, \"name\": …}"}
			}
			return nil, tx.Exec(`INSERT INTO accounts (email, name) VALUES (?, ?)`, in.Email, in.Name)
		}).
		RegisterTx("sneaky", func(tx *runtime.Tx, _ json.RawMessage) (any, error) {
			return nil, tx.Exec(`DELETE FROM stile_jobs`)
		}).
		RegisterJob(runtime.JobKind{Name: "test.echo"}).
		// Typed args, enqueued typed from a transaction too.
		RegisterTx("order", func(tx *runtime.Tx, input json.RawMessage) (any, error) {
			r, err := api.DecodeArgs[receipt.Receipt](input)
			if err != nil {
				return nil, &api.Error{Status: 400, Code: "invalid_order", Message: err.Error()}
			}
			job, err := tx.EnqueueArgs(r, api.EnqueueRequest{Tags: []string{"order"}})
			return map[string]string{"job_id": job.ID}, err
		}).
		// One at a time, by the module's default limit.
		RegisterJob(runtime.JobKind{Name: "test.limited", ConcurrencyKey: "limited", Lease: time.Second,
			Backoff: 200 * time.Millisecond, MaxBackoff: time.Second}).
		// Handled by a batch handler (e2e/testhandlers).
		RegisterJob(runtime.JobKind{Name: "test.batch"}).
		RegisterJob(runtime.JobKind{Name: "test.rated", RateKey: "hourly", Lease: time.Second,
			Backoff: 200 * time.Millisecond, MaxBackoff: time.Second}).
		RegisterJob(runtime.JobKind{Name: "test.fast", MaxAttempts: 3, Lease: time.Second,
			Backoff: 200 * time.Millisecond, MaxBackoff: time.Second}).
		// A handler stuck in an outbound call: its time limit must cut it
		// (e2e's edge tests), long before a dead push would expire.
		RegisterJob(runtime.JobKind{Name: "test.hang", MaxAttempts: 1, Lease: time.Second, Timeout: 2 * time.Second}).
		RegisterJob(runtime.JobKind{Name: "test.other", Queue: "other", Priority: 3}).
		// A kind of its own queue, run by executors like any other.
		RegisterJob(runtime.JobKind{Name: "test.email", Queue: "email"}).
		// A runaway guest on demand: its validator never returns when args
		// are {"spin":true}, so tests can show the host stops it.
		RegisterJob(runtime.JobKind{Name: "test.spin", Validate: func(args json.RawMessage) error {
			var v struct{ Spin bool }
			_ = json.Unmarshal(args, &v)
			//lint:ignore SA5002 the kind exists to spin, so that tests show the host stops a runaway guest
			for v.Spin {
			}
			return nil
		}}).
		RegisterJob(runtime.JobKind{Name: "test.validated", Validate: func(args json.RawMessage) error {
			var v struct {
				N *int `json:"n"`
			}
			if err := json.Unmarshal(args, &v); err != nil || v.N == nil {
				return errors.New(`args must be an object with a number "n"`)
			}
			return nil
		}})
}
