// Package testapp is the tenant module the conformance suite runs in every
// host: a few job kinds with short leases and backoffs so that scenarios in
// real time (workerd) stay quick. It is a user package like any other; it
// is not part of the default module.
package testapp
