package emails

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/schema"
)

// Kind is the job kind of a welcome email.
const Kind = "email.welcome"

// Args are a welcome email's arguments: the job kind is the type
// (api.JobArgs), and Validate refuses bad args at enqueue (400
// invalid_args), so no bad job is stored.
type Args struct {
	To   string `json:"to"`
	Name string `json:"name"`
}

// Kind implements api.JobArgs.
func (Args) Kind() string { return Kind }

// Validate implements api.ArgsValidator.
func (a Args) Validate() error {
	if !strings.Contains(a.To, "@") {
		return fmt.Errorf("to: %q is not an email address", a.To)
	}
	return nil
}

// App registers the module's job kinds, its own table and its signup
// transaction. The tenant module's main package serves it; tests run it
// in-process.
func App() *runtime.App {
	app := runtime.NewApp().
		Migrations(schema.Migration{Version: 1, Name: "users",
			SQL: `CREATE TABLE users (email TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT`}).
		RegisterTx("signup", Signup)
	return runtime.RegisterJobArgs[Args](app, runtime.JobKind{Queue: "email", MaxAttempts: 8, Lease: 30 * time.Second, Backoff: 10 * time.Second})
}

// Signup stores a user and enqueues their welcome email in one storage
// transaction (POST /v1/t/{tenant}/tx/signup with {"to": …, "name": …}):
// both happen or neither. An address already signed up fails the insert,
// and the email enqueued a moment before is not sent either.
func Signup(tx *runtime.Tx, input json.RawMessage) (any, error) {
	a, err := api.DecodeArgs[Args](input)
	if err != nil || a.Validate() != nil {
		return nil, &api.Error{Status: 400, Code: "invalid_signup", Message: `send {"to": "<email>", "name": "<name>"}`}
	}
	job, err := tx.EnqueueArgs(a, api.EnqueueRequest{})
	if err != nil {
		return nil, err
	}
	if err := tx.Exec(`INSERT INTO users (email, name, created_at) VALUES (?, ?, ?)`, a.To, a.Name, tx.Now().UnixMilli()); err != nil {
		return nil, fmt.Errorf("sign up %s: %w", a.To, err)
	}
	return map[string]string{"welcome_job": job.ID}, nil
}
