package emails

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stile-run/stile/runtime"
)

// Kind is the job kind of a welcome email.
const Kind = "email.welcome"

// Args are a welcome email's arguments.
type Args struct {
	To   string `json:"to"`
	Name string `json:"name"`
}

// App registers the module's job kinds. The tenant module's main package
// serves it; tests run it in-process.
func App() *runtime.App {
	return runtime.NewApp().RegisterJob(runtime.JobKind{
		Name:        Kind,
		Queue:       "email",
		MaxAttempts: 8,
		Lease:       30 * time.Second,
		Backoff:     10 * time.Second,
		// Refused at enqueue with 400 invalid_args, so no bad job is stored.
		Validate: func(raw json.RawMessage) error {
			var a Args
			if err := json.Unmarshal(raw, &a); err != nil {
				return err
			}
			if !strings.Contains(a.To, "@") {
				return fmt.Errorf("to: %q is not an email address", a.To)
			}
			return nil
		},
	})
}
