// Package do is the host ABI of a Stile tenant module: the one definition
// of what a tenant module imports and exports, how values cross (codec.go),
// and the request and response frames (frame.go). Three hosts implement
// it: the Durable Object's JS shim (host/workerd/js/abi.mjs), the wazero host
// (host/wazerohost) and the in-process native host (host/native); the
// contract suite in host/contract runs one table of cases against all three.
//
// A request frame carries a few headers, each set by one party:
//
//	traceparent      request   the transport copies it from the HTTP request
//	                           when it is a well-formed W3C traceparent
//	stile-principal  request   the transport, after authenticating the
//	                           caller (one token today: "admin")
//	allow            response  the module, on a 405; copied onto HTTP
//	stile-route      response  the module: the matched route pattern, for
//	                           the host's metrics; never sent over HTTP
//
// Names starting with "stile-" are reserved: a client's header of such a
// name never reaches a module, and no transport copies a stile- response
// header onto HTTP. Other response headers are copied. At most 16 headers,
// names of at most 64 bytes in [a-z0-9-], values of at most 1024 printable
// ASCII bytes; a frame beyond that is refused with ErrCodec (header.go).
//
// Inside a module, tenant code sees the object through Host: SQL
// statements, transactions as host callbacks (a nested one is a savepoint),
// the host's clock and its log. A guest panic is never turned into a value:
// it traps, and the host rolls back the open transaction and discards the
// instance. Package runtime and its stores import it inside the module;
// every host imports it outside.
package do
