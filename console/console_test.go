package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/console"
)

// TestFavicon: the icon browsers ask for on every page load is served,
// without a token, as the console's SVG; and the Worker's module names it.
func TestFavicon(t *testing.T) {
	for _, p := range []string{console.FaviconPath, console.Path + "/favicon.svg"} {
		rec := httptest.NewRecorder()
		console.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		require.Equal(t, http.StatusOK, rec.Code, p)
		require.Equal(t, "image/svg+xml", rec.Header().Get("Content-Type"), p)
		require.True(t, strings.HasPrefix(rec.Body.String(), "<svg"), p)
	}
	m := console.Module()
	require.Contains(t, m, `export const FAVICON_PATH = "/favicon.ico";`)
	require.Contains(t, m, `export const FAVICON = "favicon.svg";`)
	require.Contains(t, m, `"favicon.svg": { type: "image/svg+xml"`)
}
