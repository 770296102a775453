package sqltext_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/schema/internal/sqltext"
)

func TestCompact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"-- a table\nCREATE TABLE t (   -- its columns\n  a  INTEGER, -- the a\n  b TEXT DEFAULT '--  not a comment'\n);\n": "CREATE TABLE t (\na INTEGER,\nb TEXT DEFAULT '--  not a comment'\n);",
		"SELECT /* x */ 1 - -1, 2/3, a-b":                          "SELECT 1 - -1, 2/3, a-b",
		`SELECT 'it''s  -- here', "a  ""b""", [c  d], ` + "`e  f`": `SELECT 'it''s  -- here', "a  ""b""", [c  d], ` + "`e  f`",
		"  \n\n  ": "",
	} {
		require.Equal(t, want, sqltext.Compact(in), "%q", in)
	}
}
