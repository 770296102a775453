// Package runtime is what a tenant module is made of: the registry of your
// job kinds (App) and the tenant's API, served inside one Durable Object per
// tenant (or under the local wazero host, which runs the same module).
//
// A tenant module is a main package that registers its kinds and calls
// Serve from init:
//
//	package main
//
//	import "github.com/stile-run/stile/runtime"
//
//	func init() {
//		app := runtime.NewApp()
//		app.RegisterJob(runtime.JobKind{Name: "email.send", MaxAttempts: 5})
//		runtime.Serve(app)
//	}
//
//	func main() {}
//
// `stile dev ./yourpkg` compiles it with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared and serves it locally; `stile build ./yourpkg` makes
// the Worker bundle. Handler bodies never run in the module: workers (see
// package worker) claim jobs over HTTP, run them, and report.
//
// The module owns the whole API: transports hand it request frames and
// return its response frames (package do), so every host answers alike.
// Tenant main packages import it (it is the module), and so do the native
// host and stiletest, which run it without Wasm. Its stores are under
// runtime/internal; docs/DESIGN.md, "How the code is laid out", maps them.
package runtime
