package api_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// TestSecurityTableIsFresh: docs/SECURITY.md's route × role table is
// api.RoleTable. STILE_UPDATE=1 rewrites it.
func TestSecurityTableIsFresh(t *testing.T) {
	const path = "../docs/SECURITY.md"
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(b)
	start, end := strings.Index(doc, "<!-- roles -->\n"), strings.Index(doc, "<!-- /roles -->")
	require.True(t, start >= 0 && end > start, "docs/SECURITY.md has the roles markers")
	want := doc[:start] + "<!-- roles -->\n" + api.RoleTable() + doc[end:]
	if os.Getenv("STILE_UPDATE") == "1" {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
	}
	require.Equal(t, want, doc, "docs/SECURITY.md's table is stale: STILE_UPDATE=1 go test ./api -run SecurityTable")
}
