package workerd_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/host/workerd"
)

const users = `# Our app's Worker.
name = "shop-jobs"
main = "src/old.js" # replaced by stile build
compatibility_date = "2026-07-01"

[vars]
REFUNDS_PROVIDER_URL = "https://pay.example.com" # a comment kept

# The receipts bucket.
[[r2_buckets]]
binding = "RECEIPTS"
bucket_name = "receipts"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["Counter"]
`

func TestUpdateWranglerRewritesOnlyWhatStileOwns(t *testing.T) {
	got, err := workerd.UpdateWrangler([]byte(users), workerd.Wrangler{Name: "ignored", Main: "build/edge.mjs", Edge: true})
	require.NoError(t, err)
	s := string(got)
	for _, l := range strings.Split(users, "\n") {
		if strings.HasPrefix(l, "main =") {
			continue
		}
		require.Contains(t, s, l+"\n", "the user's line is kept byte for byte: %q", l)
	}
	require.Contains(t, s, "main = \"build/edge.mjs\"\n")
	require.NotContains(t, s, "src/old.js")
	require.Contains(t, s, `compatibility_date = "2026-07-01"`, "the user's date is theirs")
	require.Equal(t, 1, strings.Count(s, `name = "TENANT"`))
	require.Equal(t, 1, strings.Count(s, `name = "DIRECTORY"`))
	require.Contains(t, s, "[[services]]\nbinding = \"EXECUTOR\"\nservice = \"shop-jobs\"\n")
	require.Contains(t, s, "tag = \"stile-v1\"")
	require.Contains(t, s, "tag = \"v1\"\nnew_sqlite_classes = [\"Counter\"]", "the user's own migration stays")
	require.Less(t, strings.Index(s, "[vars]"), strings.Index(s, "[[rules]]"), "the user's tables keep their place")

	again, err := workerd.UpdateWrangler(got, workerd.Wrangler{Name: "shop-jobs", Main: "build/edge.mjs", Edge: true})
	require.NoError(t, err)
	require.Equal(t, s, string(again), "a second build changes nothing")

	plain, err := workerd.UpdateWrangler(got, workerd.Wrangler{Main: "build/worker.mjs"})
	require.NoError(t, err)
	require.NotContains(t, string(plain), "EXECUTOR", "a build without edge executors drops their binding")
	require.Contains(t, string(plain), "[[r2_buckets]]\nbinding = \"RECEIPTS\"")
}

func TestUpdateWranglerWritesANewConfig(t *testing.T) {
	got, err := workerd.UpdateWrangler(nil, workerd.Wrangler{Name: "acme-jobs", Main: "build/worker.mjs"})
	require.NoError(t, err)
	s := string(got)
	require.True(t, strings.HasPrefix(s, "# The Worker of a Stile deployment."))
	require.Contains(t, s, "name = \"acme-jobs\"\nmain = \"build/worker.mjs\"\ncompatibility_date = \""+workerd.CompatibilityDate+"\"\n")
	require.Contains(t, s, "[[rules]]\ntype = \"CompiledWasm\"\nglobs = [\"**/*.wasm\"]\nfallthrough = false\n")
	require.NotContains(t, s, "EXECUTOR")
}

func TestUpdateWranglerRefusesWhatItCannotEdit(t *testing.T) {
	_, err := workerd.UpdateWrangler([]byte("name = \"x\"\ndurable_objects = { bindings = [] }\n"), workerd.Wrangler{Main: "m"})
	require.ErrorIs(t, err, workerd.ErrWranglerForm)
	require.ErrorContains(t, err, "write durable_objects as [[durable_objects]] tables")
	_, err = workerd.UpdateWrangler([]byte("name = \"x\"\n[vars]\nA = \"\"\"\nmulti\n\"\"\"\n"), workerd.Wrangler{Main: "m"})
	require.ErrorIs(t, err, workerd.ErrWranglerForm)
}

// The repository's own wrangler.toml is what stile build keeps for the
// built-in module: building it changes nothing.
func TestTheTrackedWranglerConfigIsStableUnderStileBuild(t *testing.T) {
	b, err := os.ReadFile("../../wrangler.toml")
	require.NoError(t, err)
	got, err := workerd.UpdateWrangler(b, workerd.Wrangler{Main: "build/worker.mjs"})
	require.NoError(t, err)
	require.Equal(t, string(b), string(got))
}
