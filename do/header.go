package do

import (
	"strconv"
	"strings"

	"github.com/stile-run/stile/internal/printf"
)

// Header is one request or response header crossing the ABI. Names are
// lower-case ASCII (a-z, 0-9, '-'), values printable ASCII; a frame holds at
// most MaxHeaders of them. Only the headers below cross: transports do not
// forward a client's headers wholesale, so what a module sees is what the
// host decided it should see.
type Header struct {
	Name, Value string
}

// Headers is a frame's header list, in order; a name may repeat.
type Headers []Header

// Get returns the value of the first header called name, or "".
func (hs Headers) Get(name string) string {
	for _, h := range hs {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// Set replaces the value of the first header called name, or adds it.
func (hs *Headers) Set(name, value string) {
	for i := range *hs {
		if (*hs)[i].Name == name {
			(*hs)[i].Value = value
			return
		}
	}
	*hs = append(*hs, Header{Name: name, Value: value})
}

// The headers Stile uses, and who sets each:
//
//	traceparent      request   the transport, copied from the HTTP request
//	                           when it is a well-formed W3C traceparent
//	                           (ValidTraceparent); dropped otherwise
//	stile-principal  request   the transport, after it authenticated the
//	                           caller (today one token: PrincipalAdmin)
//	stile-tenant     request   the transport: the tenant the object is, by
//	                           its own identity; the module refuses a path
//	                           naming another
//	stile-executor   request   the transport, when it can deliver pushes to
//	                           executors (a value naming how: "binding",
//	                           "process")
//	stile-token-id   request   the transport: the id of the scoped token it
//	                           verified ("secret" for the deployment's own),
//	                           kept with operator actions in the audit list
//	stile-module     request   the transport: the module's version, a hash
//	                           of its bytes (ModuleVersion), when it has one
//	stile-db-bytes   request   the transport, on GET …/storage only
//	                           (WantsDatabaseSize): the tenant database's
//	                           size in bytes as the platform measures it
//	stile-create     request   the transport: which writes create a tenant
//	                           that does not exist (api.ParseCreateRole: a
//	                           role, or "none"); absent: writers and above
//	allow            response  the module, on a 405; transports copy it onto
//	                           the HTTP response
//	stile-route      response  the module: the matched route pattern, for
//	                           the host's metrics; never sent over HTTP
//	stile-directory  response  the module, on its first use and when it goes
//	                           from idle to having ready work or back: an
//	                           api.DirectoryNote as JSON for the directory
//	stile-absent     response  the module, when it answered for a tenant
//	                           that does not exist (and created nothing): a
//	                           host removes whatever storage the call opened
//	stile-push       response  the module: pushes to deliver to executors,
//	                           an api.Push as JSON (only when the request
//	                           carried stile-executor)
//	stile-held       request   the transport, when it holds claims of the
//	                           tenant: how many in all and how many of this
//	                           request's token ("<tenant>,<token>"; absent:
//	                           none), so the module answers a claim at once
//	                           rather than hold one too many
//	stile-hold       response  the module, on a held claim (HoldMs): the
//	                           work it waits for (Hold as JSON); absent: any
//	stile-usage      request   the transport, on every call: its running
//	                           count of the object's requests, alarms, and
//	                           the storage rows and module time of the calls
//	                           that ended ("gen,requests,alarms,rows read,
//	                           rows written,module µs"; gen names the
//	                           object's instance); absent: it counts none
//	stile-changes    response  the module, when the request committed
//	                           changes to jobs, reactions or projections: an
//	                           api.Change as JSON; the host sends it to the
//	                           tenant's watchers (GET …/watch)
//	stile-woke       response  the module, with FlagWake: the work that
//	                           became ready (Hold as JSON); the transport
//	                           wakes only the held claims it matches (Hold.
//	                           Matches); absent: every held claim
//
// Names starting with ReservedPrefix belong to Stile: a client-sent header
// of such a name is never passed into a module, and transports never copy a
// stile- response header onto HTTP. Other response headers a module sets
// are copied onto the HTTP response.
const (
	HeaderTraceparent = "traceparent"
	HeaderAllow       = "allow"
	HeaderPrincipal   = "stile-principal"
	HeaderRoute       = "stile-route"
	HeaderTenant      = "stile-tenant"
	HeaderExecutor    = "stile-executor"
	HeaderPush        = "stile-push"
	HeaderDirectory   = "stile-directory"
	HeaderFailing     = "stile-failing"
	HeaderTokenID     = "stile-token-id"
	HeaderDBBytes     = "stile-db-bytes"
	HeaderModule      = "stile-module"
	HeaderCreate      = "stile-create"
	HeaderAbsent      = "stile-absent"
	HeaderHeld        = "stile-held"
	HeaderHold        = "stile-hold"
	HeaderWoke        = "stile-woke"
	HeaderUsage       = "stile-usage"
	HeaderChanges     = "stile-changes"
	HeaderWatched     = "stile-watched"

	ReservedPrefix = "stile-"

	// PrincipalAdmin is the principal of a caller holding the deployment's
	// one token.
	PrincipalAdmin = "admin"
)

// Limits of a frame's headers.
const (
	MaxHeaders     = 16
	MaxHeaderName  = 64
	MaxHeaderValue = 1024
)

// WantsDatabaseSize reports whether a request needs stile-db-bytes: only
// GET /v1/t/{tenant}/storage does, so that no other request pays for
// measuring the database.
func WantsDatabaseSize(method, path string) bool {
	return method == "GET" && strings.HasSuffix(path, "/storage")
}

// Reserved reports whether a header name belongs to Stile (stile-…).
func Reserved(name string) bool { return strings.HasPrefix(name, ReservedPrefix) }

// CheckHeader refuses a header a frame may not carry, with ErrCodec.
func CheckHeader(h Header) error {
	// One message built in one place: each fmt call costs the module.
	problem := ""
	if len(h.Name) == 0 || len(h.Name) > MaxHeaderName {
		problem = headerNameRule
	}
	for i := 0; i < len(h.Name); i++ {
		if c := h.Name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			problem = headerNameRule
		}
	}
	if problem == "" && len(h.Value) > MaxHeaderValue {
		problem = "a value of " + strconv.Itoa(len(h.Value)) + " bytes is over " + strconv.Itoa(MaxHeaderValue)
	}
	for i := 0; problem == "" && i < len(h.Value); i++ {
		if c := h.Value[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			problem = "a control or non-ASCII byte in the value"
		}
	}
	if problem == "" {
		return nil
	}
	return printf.Errorf("%w: header %q: %s", ErrCodec, h.Name, problem)
}

const headerNameRule = "the name is not lower-case ASCII [a-z0-9-] of 1 to 64 bytes"

// ValidTraceparent reports whether s is a W3C traceparent a transport may
// pass on: version 00, "00-<32 hex>-<16 hex>-<2 hex>" in lower case, with
// a trace id and a parent id that are not all zeros.
func ValidTraceparent(s string) bool {
	if len(s) != 55 || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	return hexID(s[3:35]) && hexID(s[36:52]) && hexID(s[53:55])
}

// hexID: lower-case hex, and not all zeros when longer than a flags byte.
func hexID(s string) bool {
	zero := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
		zero = zero && c == '0'
	}
	return !zero || len(s) == 2
}
