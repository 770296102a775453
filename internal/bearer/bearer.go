// Package bearer checks a request's bearer token, in constant time: the
// one check of the Go hosts' API server and of the executors.
package bearer

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Matches reports whether r carries "Authorization: Bearer <token>".
func Matches(r *http.Request, token []byte) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && len(token) > 0 && subtle.ConstantTimeCompare([]byte(got), token) == 1
}
