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
// Natively Serve only records app: native hosts are given the App itself
// (native.Config.App), as the examples' tests do.
func Serve(app *App) {
	if app == nil {
		panic("stile: runtime.Serve(nil)")
	}
	served = app
}
