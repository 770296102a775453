package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The cases are WHATWG URL's (what new URL(...).pathname gives in workerd,
// then decodeURIComponent).
func TestResolvePath(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/t/acme/jobs":                  "/v1/t/acme/jobs",
		"/v1/t/acme/jobs/../status":        "/v1/t/acme/status",
		"/v1/t/acme/./status":              "/v1/t/acme/status",
		"/v1/t/acme/jobs/%2E%2e/status":    "/v1/t/acme/status",
		"/v1/t/acme/jobs/.%2E/status":      "/v1/t/acme/status",
		"/v1/t/acme/jobs/..":               "/v1/t/acme/",
		"/v1/t/acme/jobs/.":                "/v1/t/acme/jobs/",
		"/../../v1/t/acme/status":          "/v1/t/acme/status",
		"/v1/t/acme/streams/a%20b":         "/v1/t/acme/streams/a b",
		"/v1/t/acme/streams/a%2F..%2Fb":    "/v1/t/acme/streams/a/../b", // an encoded slash is no separator
		"/v1/t/acme/streams/100%":          "/v1/t/acme/streams/100%",   // undecodable: left as it is
		"/v1/t/acme/streams/...":           "/v1/t/acme/streams/...",
		"/":                                "/",
		"/v1/t/acme/jobs/..%2f":            "/v1/t/acme/jobs/../",
		"/v1/t/acme/schedules/%2e%2e%2e/x": "/v1/t/acme/schedules/.../x",
	} {
		require.Equal(t, want, resolvePath(in), in)
	}
}
