// Command tenant is the partial test module.
package main

import (
	"github.com/stile-run/stile/cmd/stile/testdata/partial"
	"github.com/stile-run/stile/runtime"
)

func init() {
	runtime.Serve(runtime.NewApp().
		RegisterJob(runtime.JobKind{Name: partial.Greet}).
		RegisterJob(runtime.JobKind{Name: partial.Forgotten, Queue: "later"}).
		RegisterPolicy(runtime.Policy{Name: partial.Audit, Events: []string{partial.Said}}).
		RegisterPolicy(runtime.Policy{Name: partial.Unheard, Events: []string{partial.Said}}))
}

func main() {}
