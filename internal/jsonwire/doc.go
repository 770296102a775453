// Package jsonwire reads and writes the JSON of Stile's wire types without
// reflection: the primitives that api's generated code (api/json_gen.go,
// written by api/internal/apigen) and the module's own readers and
// writers call. It is internal: users read and write the API's types
// with their AppendJSON, MarshalJSON and Decode functions.
package jsonwire
