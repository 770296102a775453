// Command tenant is the example's tenant module: build it with
// `stile build ./examples/emails/tenant` or serve it with `stile dev`.
package main
