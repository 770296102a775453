// Command v2bad serves the upgrade test module at version v2bad.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/upgrade"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(upgrade.App("v2bad")) }

func main() {}
