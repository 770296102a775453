package api

import (
	"fmt"
	"strings"
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

// InvalidTenant is the body of the 400 for a tenant name that breaks the
// rule. It does not quote the name, so every transport words it alike.
var InvalidTenant = Error{Code: CodeInvalidTenant,
	Message: "invalid tenant name: use 1-63 characters of a-z, 0-9, '-' and '_', starting with a letter or digit"}

// BodyTooLarge is the body of the 413 for a request body over MaxBodyBytes.
var BodyTooLarge = Error{Code: CodeBodyTooLarge,
	Message: fmt.Sprintf("request body exceeds %d bytes", MaxBodyBytes)}

// NoRoute is the message of a 404 for a path that is no API route.
func NoRoute(method, path string) string {
	return fmt.Sprintf("no route %s %s: tenant routes start with /%s/t/{tenant}/", method, path, Version)
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

// Unauthorized is the body of every 401.
var Unauthorized = Error{Code: CodeUnauthorized,
	Message: "missing or wrong bearer token: send the header \"Authorization: Bearer\" followed by the deployment's token"}

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
