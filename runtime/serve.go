package runtime

// served is the App handed to Serve.
var served *App

// Serve makes app the registry of this tenant module. Call it from an init
// function of your main package: inside a Wasm reactor module main never
// runs, init does.
//
//	func init() { runtime.Serve(myapp.App()) }
//	func main() {}
//
// Natively (tests, the in-process host) Serve only records app; Served
// returns it.
func Serve(app *App) {
	if app == nil {
		panic("stile: runtime.Serve(nil)")
	}
	served = app
}

// Served returns the App passed to Serve, or nil.
func Served() *App { return served }
