// Command heavy is a tenant module that imports net/http, as a module
// importing a handler package would: stile build warns that it is over
// its size budget, and names net/http.
package main

import (
	"encoding/json"
	"net/http"

	"github.com/stile-run/stile/runtime"
)

var client = http.DefaultClient

func init() {
	runtime.Serve(runtime.NewApp().RegisterJob(runtime.JobKind{Name: "fetch", Validate: func(args json.RawMessage) error {
		_, err := client.Get(string(args))
		return err
	}}))
}

func main() {}
