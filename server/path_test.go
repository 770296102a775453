package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The module sees the path percent-decoded, as decodeURIComponent gives it
// in workerd; dot and empty segments never get this far (api.CheckPath).
func TestDecodePath(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/t/acme/jobs":               "/v1/t/acme/jobs",
		"/v1/t/acme/streams/a%20b":      "/v1/t/acme/streams/a b",
		"/v1/t/acme/streams/a%2F..%2Fb": "/v1/t/acme/streams/a/../b", // an encoded slash is no separator
		"/v1/t/acme/streams/...":        "/v1/t/acme/streams/...",
		"/":                             "/",
	} {
		require.Equal(t, want, decodePath(in), in)
	}
}
