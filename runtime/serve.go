package runtime

import "github.com/stile-run/stile/do"

// Serve makes app the registry of this tenant module: its Tenant answers
// every request (do.Serve owns the module's exports). Call it from an init
// function of your main package: inside a Wasm reactor module main never
// runs, init does.
//
//	func init() { runtime.Serve(myapp.App()) }
//	func main() {}
//
// Natively Serve only checks app: native hosts are given the App itself
// (native.Config.App), as the examples' tests do.
func Serve(app *App) {
	if app == nil {
		panic("stile: runtime.Serve(nil)")
	}
	do.Serve(func(h do.Host) do.Handler { return NewTenant(app, h) })
}
