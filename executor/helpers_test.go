package executor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func httptestServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
