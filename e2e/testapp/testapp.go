package testapp

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/stile-run/stile/runtime"
)

var spins int

// App registers the test kinds.
func App() *runtime.App {
	return runtime.NewApp().
		ConcurrencyLimit("limited", 1).
		RegisterJob(runtime.JobKind{Name: "test.echo"}).
		// One at a time, by the module's default limit.
		RegisterJob(runtime.JobKind{Name: "test.limited", ConcurrencyKey: "limited", Lease: time.Second,
			Backoff: 200 * time.Millisecond, MaxBackoff: time.Second}).
		RegisterJob(runtime.JobKind{Name: "test.fast", MaxAttempts: 3, Lease: time.Second,
			Backoff: 200 * time.Millisecond, MaxBackoff: time.Second}).
		RegisterJob(runtime.JobKind{Name: "test.other", Queue: "other", Priority: 3}).
		// A runaway guest on demand: its validator never returns when args
		// are {"spin":true}, so tests can show the host stops it.
		RegisterJob(runtime.JobKind{Name: "test.spin", Validate: func(args json.RawMessage) error {
			var v struct{ Spin bool }
			_ = json.Unmarshal(args, &v)
			for v.Spin {
				spins++
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
