// Command tenant is the refunds example's tenant module (its aggregates,
// policy and projection, from package refunds): build it with
// `stile build ./examples/refunds/tenant` or serve it with
// `stile dev ./examples/refunds/tenant`.
package main
