// Command v2changed serves the upgrade test module at version v2changed.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/upgrade"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(upgrade.App("v2changed")) }

func main() {}
