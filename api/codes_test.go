package api_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/api/internal/apigen"
)

// TestCodesGenerated fails when codes_gen.go or the table of docs/API.md
// no longer follow the Code constants: run go generate ./api.
func TestCodesGenerated(t *testing.T) {
	codes, err := apigen.Codes(".")
	require.NoError(t, err)
	require.NotEmpty(t, codes)
	src, err := apigen.CodesGo(codes)
	require.NoError(t, err)
	have, err := os.ReadFile(apigen.CodesOutput)
	require.NoError(t, err)
	require.Equal(t, string(src), string(have), "codes_gen.go is stale: run go generate ./api")
	doc, err := os.ReadFile("../docs/API.md")
	require.NoError(t, err)
	want, err := apigen.CodesDoc(doc, codes)
	require.NoError(t, err)
	require.Equal(t, string(want), string(doc), "the table of codes in docs/API.md is stale: run go generate ./api")
	for _, c := range codes {
		require.Equal(t, c.Status, api.Code(c.Value).Status(), c.Ident)
		require.Equal(t, c.Stale, api.Code(c.Value).Stale(), c.Ident)
	}
}

func TestRefuseTakesTheCodesStatus(t *testing.T) {
	e := api.Refuse(api.CodeStaleAttempt, "job %d attempt %d", 4, 2)
	require.Equal(t, 409, e.Status)
	require.Equal(t, "stale_attempt: job 4 attempt 2", e.Error())
	require.ErrorIs(t, e, api.ErrStale)
	require.NotErrorIs(t, api.Refuse(api.CodeFinished, "x"), api.ErrStale)
	require.Equal(t, 0, api.Code("out_of_stock").Status(), "a transaction's own code has no declared status")
}

func TestParseRefusesACodeWithoutStatus(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/x.go", []byte("package api\n\nconst CodeX Code = \"x\" // the meaning, but no status\n"), 0o644))
	_, err := apigen.Codes(dir)
	require.ErrorContains(t, err, "must read \"NNN: meaning\"")
	require.NoError(t, os.WriteFile(dir+"/x.go", []byte("package api\n\nconst (\n\tCodeX Code = \"x\" // 409: a\n\tCodeY Code = \"x\" // 409: b\n)\n"), 0o644))
	_, err = apigen.Codes(dir)
	require.ErrorContains(t, err, "declare each code once")
}
