// Command stile builds, serves and measures Stile tenant modules.
//
//	stile dev [flags] [pkg]     serve pkg's module locally (wazero + SQLite files)
//	stile build [flags] [pkg]   write build/tenant.wasm and the Worker bundle
//	stile work [flags]          run a worker for the default module's job kinds
//	stile bench [flags]         measure the job cycle natively, under wazero and over HTTP
//	stile version               print the version
//
// pkg is a main package that registers job kinds and calls runtime.Serve
// (see examples/). Without it, a built-in default module is used.
package main
