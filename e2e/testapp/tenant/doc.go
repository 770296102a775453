// Command tenant is the test module's main package, built to .wasm for the
// wazero and workerd layers of the conformance suite.
package main
