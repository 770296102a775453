package api

import (
	"slices"
	"strings"

	"github.com/stile-run/stile/internal/printf"
)

// TenantPattern is the rule for tenant names, as a regular expression for
// hosts that want one (the Worker's JS entry is generated from it). A name
// is 1 to 63 characters of lower-case letters, digits, '-' and '_', starting
// with a letter or digit. Such a name is also a safe file name on every
// file system, which is what the local host stores each tenant under.
const TenantPattern = `^[a-z0-9][a-z0-9_-]{0,62}$`

// ValidTenant reports whether name matches TenantPattern.
func ValidTenant(name string) bool {
	if len(name) == 0 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// The answers every host words alike, whichever layer gives them: the
// transports (the Worker's JS, the Go server) give some before the module
// runs, and the Worker's config.mjs is generated from these.
var (
	// InvalidTenant is the 400 for a tenant name that breaks the rule. It
	// does not quote the name, so every transport words it alike.
	InvalidTenant = Error{Status: 400, Code: CodeInvalidTenant,
		Message: "invalid tenant name: use 1-63 characters of a-z, 0-9, '-' and '_', starting with a letter or digit"}
	// BodyTooLarge is the 413 for a request body over MaxBodyBytes.
	BodyTooLarge = Error{Status: 413, Code: CodeBodyTooLarge,
		Message: printf.Sprintf("request body exceeds %d bytes", MaxBodyBytes)}
	// HeadersTooLarge is the 431 for request headers over MaxHeaderBytes.
	HeadersTooLarge = Error{Status: 431, Code: CodeHeadersTooLarge,
		Message: printf.Sprintf("request headers exceed %d bytes (their names and values): send fewer or shorter ones", MaxHeaderBytes)}
	// WrongObject is the 400 of a tenant's object asked for another
	// tenant's path (a caller that binds the Tenant class directly and
	// routes by itself); it writes nothing.
	WrongObject = Error{Status: 400, Code: CodeInvalidTenant,
		Message: "this object serves another tenant: send each tenant's requests to the object idFromName(tenant) names"}
	// Unauthorized is every 401.
	Unauthorized = Error{Status: 401, Code: CodeUnauthorized,
		Message: "missing or wrong bearer token: send the header \"Authorization: Bearer\" followed by the deployment's token"}
)

// NoRouteHint ends the message of every 404 for a path that is no route.
const NoRouteHint = "the routes are /" + Version + "/t/{tenant}/… (docs/API.md lists them)"

// NoRoute is the 404 for a request that matches no route, in every host.
func NoRoute(method, path string) *Error {
	return Refuse(CodeNotFound, "no route %s %s: %s", method, path, NoRouteHint)
}

// InternalPrefix starts the message of every 500; the cause follows.
const InternalPrefix = "the request failed and wrote nothing: "

// Internal is the 500 for a request that failed: its transaction rolled
// back (or never began). cause is one line.
func Internal(cause string) *Error {
	return &Error{Status: 500, Code: CodeInternal, Message: InternalPrefix + cause}
}

// AnswerLostPrefix starts the message of a failure after the request's
// transaction committed: what it wrote stands.
const AnswerLostPrefix = "the request was applied, then its answer was lost: read the state before retrying: "

// AnswerLost is the 500 of a request whose transaction committed and
// whose answer could not be made (the module failed after the commit).
// A client must not take it for "nothing happened": an enqueue retried
// after it makes a second job.
func AnswerLost(cause string) *Error {
	return &Error{Status: 500, Code: CodeAnswerLost, Message: AnswerLostPrefix + cause}
}

// SplitTenantPath splits /v1/t/{tenant}/{rest…} into the tenant and the
// rest. ok is false when the path is not a tenant route.
func SplitTenantPath(path string) (tenant, rest string, ok bool) {
	const prefix = "/" + Version + "/t/"
	if !strings.HasPrefix(path, prefix) {
		return "", "", false
	}
	tenant, rest, _ = strings.Cut(path[len(prefix):], "/")
	return tenant, rest, true
}

// ValidName reports whether s is a valid job kind, queue or worker name:
// 1 to 128 bytes of letters, digits, '_', '.', ':' and '-', starting with a
// letter or digit.
func ValidName(s string) bool { return validName(s, MaxNameBytes) }

// ValidStream reports whether s is a valid stream name: the characters of
// ValidName, up to MaxStreamBytes ("<aggregate>:<id>" fits).
func ValidStream(s string) bool { return validName(s, MaxStreamBytes) }

// StreamRule describes ValidStream for error messages.
const StreamRule = "1-257 characters of letters, digits, '_', '.', ':' and '-', starting with a letter or digit"

func validName(s string, maxLen int) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '_' || c == '.' || c == ':' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// NameRule describes ValidName for error messages.
const NameRule = "1-128 characters of letters, digits, '_', '.', ':' and '-', starting with a letter or digit"

// TenantCreated answers PUT /v1/t/{tenant}: Created is false when the
// tenant already existed (the PUT is idempotent).
type TenantCreated struct {
	Tenant  string `json:"tenant"`
	Created bool   `json:"created"`
}

// TenantNotFound is the 404 of a request to a tenant that was never
// created. It writes nothing: no file, no object storage, no directory
// entry.
func TenantNotFound(tenant string) *Error {
	return Refuse(CodeTenantNotFound, "tenant %s does not exist: create it with PUT /%s/t/%s (stile tenants create %s), or check the name", tenant, Version, tenant, tenant)
}

// TenantQuota is the 403 of a request that would create a tenant beyond
// the deployment's quota for the token's tenant prefix.
func TenantQuota(scope string, quota int) *Error {
	return Refuse(CodeTenantQuota, "this token's prefix %s already has %d tenants, the deployment's quota per prefix: erase one, or ask for a token of another prefix", scope, quota)
}

// AtLeast reports whether r is o or ranks above it in Roles (admin,
// operator, writer, worker, reader).
func (r Role) AtLeast(o Role) bool {
	ri, oi := slices.Index(Roles, r), slices.Index(Roles, o)
	return ri >= 0 && oi >= 0 && ri <= oi
}

// NoCreation is the creation setting under which only PUT /v1/t/{tenant}
// creates a tenant.
const NoCreation = "none"

// ParseCreateRole reads a deployment's setting of which writes create a
// tenant: a role (a write by that role or one above it creates the tenant
// it names), "none" (only PUT /v1/t/{tenant} does), or "" for the
// default, writer. It returns the least role that creates, "" for none.
func ParseCreateRole(s string) (Role, error) {
	switch s {
	case "":
		return RoleWriter, nil
	case NoCreation:
		return "", nil
	}
	if r := Role(s); r.Valid() && r != RoleReader {
		return r, nil
	}
	return "", printf.Errorf("tenant creation %q: use admin, operator, writer, worker or none", s)
}

// MayCreate reports whether a request for a tenant that does not exist
// creates it: PUT /v1/t/{tenant} by a role allowed to, or a POST or PUT
// by least or a role above it (least "": none); a DELETE never does. rest is the
// path after the tenant. The hosts decide with it before they open any
// storage, and the module again before it matches the route.
func MayCreate(method, rest string, role, least Role) bool {
	if method == "PUT" && rest == "" {
		return RouteCreateTenant.Allows(role)
	}
	return (method == "POST" || method == "PUT") && least != "" && role.AtLeast(least)
}

// CheckPath refuses a request path (as sent: escaped) that names its
// resource ambiguously, in every host and before anything else: an empty
// segment ("//"; a trailing "/" too, on an API path), a "." or ".."
// segment (also percent-encoded), or percent-encoding that does not
// decode. Hosts that resolved such paths answered for another tenant than
// the one a reader of the path would expect, or redirected to it.
func CheckPath(escaped string) *Error {
	if escaped == "/" {
		return nil
	}
	api := strings.HasPrefix(escaped, "/"+Version+"/")
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for i, seg := range segs {
		switch {
		case seg == "" && (i < len(segs)-1 || api):
			return Refuse(CodeInvalidRequest, "path %q has an empty segment (// or a trailing /): send /%s/t/{tenant}/… as docs/API.md spells it", escaped, Version)
		case isDotSegment(seg):
			return Refuse(CodeInvalidRequest, "path %q has a %q segment: send the path without . or .. segments", escaped, seg)
		case !validEscapes(seg):
			return Refuse(CodeInvalidRequest, "path %q has a %% not followed by two hex digits: escape a %% as %%25", escaped)
		}
	}
	return nil
}

func isDotSegment(seg string) bool {
	switch strings.ToLower(seg) {
	case ".", "..", "%2e", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

func validEscapes(seg string) bool {
	hex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	for i := 0; i < len(seg); i++ {
		if seg[i] == '%' {
			if i+2 >= len(seg) || !hex(seg[i+1]) || !hex(seg[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}
