// Command v2 serves the upgrade test module at version v2.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/upgrade"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(upgrade.App("v2")) }

func main() {}
