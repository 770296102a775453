package workerd_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stile-run/stile/internal/wasmbuild"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/workerd"
)

// node returns the node binary, skipping (or failing under CI=true) when
// there is none.
func node(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: node is required for the JS shim's tests")
		}
		t.Skip("node is not installed: the JS shim's tests need Node 20+")
	}
	return p
}

// TestABIShimUnderNode runs host/workerd/js/abi_test.mjs (the JS codec against
// the vectors the Go codec writes).
func TestABIShimUnderNode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(node(t), "--test", "js/abi_test.mjs").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "# fail 0")
}

// TestTokenVectorsUnderNode runs js/token_test.mjs: the Worker's token
// verification reaches the Go host's verdicts on token/testdata/vectors.json.
func TestTokenVectorsUnderNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, workerd.ConfigFile), []byte(workerd.Config()), 0o644))
	for _, f := range []string{workerd.TokenFile, "token_test.mjs"} {
		b, err := os.ReadFile(filepath.Join("js", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	vectors, err := filepath.Abs("../../token/testdata/vectors.json")
	require.NoError(t, err)
	cmd := exec.Command(node(t), "--test", "token_test.mjs")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "STILE_TOKEN_VECTORS="+vectors)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "# fail 0")
	require.Regexp(t, `# pass (1[0-9]|[2-9][0-9])`, string(out), "every vector ran")
}

// TestShimImplementsEveryImport builds the default module and fails if it
// imports a function the JS shim does not provide: workerd would refuse to
// instantiate it.
func TestShimImplementsEveryImport(t *testing.T) {
	t.Parallel()
	nodeBin := node(t)
	wasmPath := filepath.Join(t.TempDir(), "tenant.wasm")
	require.NoError(t, wasmbuild.BuildWasm(context.Background(), "../..", "", wasmPath))
	wasm, err := os.ReadFile(wasmPath)
	require.NoError(t, err)
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	compiled, err := rt.CompileModule(context.Background(), wasm)
	require.NoError(t, err)

	out, err := exec.Command(nodeBin, "--input-type=module", "-e",
		`import("./js/abi.mjs").then(m => console.log(JSON.stringify(m.importNames())))`).Output()
	require.NoError(t, err)
	var provided map[string][]string
	require.NoError(t, json.Unmarshal(out, &provided))
	has := map[string]bool{}
	for mod, names := range provided {
		for _, n := range names {
			has[mod+"."+n] = true
		}
	}
	imported := 0
	for _, fn := range compiled.ImportedFunctions() {
		mod, name, _ := fn.Import()
		require.True(t, has[mod+"."+name], "the module imports %s.%s, which abi.mjs does not provide", mod, name)
		imported++
	}
	require.Greater(t, imported, 10)
	// And the shim provides every function of the ABI.
	for _, n := range []string{do.ImportSQL, do.ImportTake, do.ImportTx, do.ImportNow, do.ImportLog} {
		require.True(t, has[do.ImportModule+"."+n], "abi.mjs lacks %s", n)
	}
}

func TestConfigMatchesTheAPI(t *testing.T) {
	t.Parallel()
	cfg := workerd.Config()
	get := func(name string) string {
		m := regexp.MustCompile(`export const ` + name + ` = (.*);`).FindStringSubmatch(cfg)
		require.NotNil(t, m, "config.mjs lacks %s", name)
		return m[1]
	}
	var body string
	require.NoError(t, json.Unmarshal([]byte(get("UNAUTHORIZED")), &body))
	want, _ := json.Marshal(api.Unauthorized)
	require.Equal(t, string(want), body, "the Worker's 401 is the Go server's, byte for byte")
	require.NoError(t, json.Unmarshal([]byte(get("INVALID_TENANT")), &body))
	want, _ = json.Marshal(api.InvalidTenant)
	require.Equal(t, string(want), body)
	var pattern string
	require.NoError(t, json.Unmarshal([]byte(get("TENANT_PATTERN")), &pattern))
	re := regexp.MustCompile(pattern)
	for _, name := range []string{"acme", "a", "a-b_c", "0x", "", "-a", "_a", "A", "a.b", "a/b", strings.Repeat("a", 63), strings.Repeat("a", 64), "é"} {
		require.Equal(t, api.ValidTenant(name), re.MatchString(name), "tenant %q: the JS pattern and ValidTenant disagree", name)
	}
}

func TestWriteWorker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, workerd.WriteWorker(dir, []byte("\x00asm")))
	for _, f := range []string{workerd.EntryFile, workerd.ABIFile, workerd.ConfigFile, workerd.WasmFile} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	entry, err := os.ReadFile(filepath.Join(dir, workerd.EntryFile))
	require.NoError(t, err)
	require.Contains(t, string(entry), `import wasm from "./`+workerd.WasmFile+`"`, "wrangler.toml's CompiledWasm rule finds the module")
}

// TestModuleStaysLean fails when a tenant module's packages start linking
// net/http (the worker's client, say): its init alone adds hundreds of
// kilobytes to every module, against Cloudflare's script size limit.
func TestModuleStaysLean(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{wasmbuild.DefaultPackage, "./e2e/testapp/tenant", "./examples/emails/tenant"} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			require.NotEqual(t, "net/http", dep, "%s links net/http: keep handlers and clients out of the module", pkg)
		}
	}
}
