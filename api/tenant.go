package api

import (
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
