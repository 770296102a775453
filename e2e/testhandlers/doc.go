// Package testhandlers holds the handlers of e2e/testapp's job kinds and
// policies that the executor tests run: natively, in-process, and in
// workerd as the edge executor, `stile build --handlers` generating its
// main from Register.
package testhandlers
