// Command v3 serves the upgrade test module at version v3.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/upgrade"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(upgrade.App("v3")) }

func main() {}
