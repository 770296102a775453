// Package docs_test keeps the docs true: DESIGN.md's layout table (every package of
// the module has its row, no package imports against the layers the
// table names) and every Markdown file's code fences.
package docs_test

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// row is one row of the layout table: its folders (a folder ending in
// "/..." stands for it and every package below it) and their kind.
type row struct {
	folders []string
	kind    string
}

// layoutTable reads the table under "How the code is laid out".
func layoutTable(t *testing.T) []row {
	t.Helper()
	f, err := os.Open("DESIGN.md")
	require.NoError(t, err)
	defer f.Close()
	var rows []row
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "| folder | kind |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		require.GreaterOrEqual(t, len(cells), 4, "a row of the layout table: %s", line)
		r := row{kind: strings.TrimSpace(cells[2])}
		// The first cell is `a/`, `b`, ...: the folders are the quoted parts.
		quoted := strings.Split(cells[1], "`")
		for i := 1; i < len(quoted); i += 2 {
			r.folders = append(r.folders, strings.TrimSuffix(quoted[i], "/"))
		}
		require.NotEmpty(t, r.folders, "a row of the layout table names no folder: %s", line)
		rows = append(rows, r)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, rows, "DESIGN.md has no layout table (| folder | kind | ...)")
	return rows
}

// covers says whether folder (as the table writes it) names pkg, a path
// relative to the module's root.
func covers(folder, pkg string) bool {
	if base, ok := strings.CutSuffix(folder, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == folder
}

// kindOf is the kind of pkg's row ("" if it has none).
func kindOf(rows []row, pkg string) string {
	for _, r := range rows {
		for _, f := range r.folders {
			if covers(f, pkg) {
				return r.kind
			}
		}
	}
	return ""
}

// importGraph is each package of the module (relative to its root) with
// the packages of the module it imports, not counting its tests: as it
// builds natively, and for the module (GOOS=wasip1), which links files of
// its own.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	modPath := goList(t, nil, "-m", "-f", "{{.Path}}")
	graph := map[string][]string{}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		out := goList(t, env, "-e", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
		for _, line := range strings.Split(out, "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			pkg, ok := relative(modPath, fields[0])
			if !ok {
				continue // the standard library and other modules
			}
			if _, ok := graph[pkg]; !ok {
				graph[pkg] = nil // a package that imports none of the module's
			}
			for _, imp := range fields[1:] {
				if dep, ok := relative(modPath, imp); ok && !slices.Contains(graph[pkg], dep) {
					graph[pkg] = append(graph[pkg], dep)
				}
			}
		}
	}
	require.NotEmpty(t, graph)
	return graph
}

func relative(modPath, importPath string) (string, bool) {
	return strings.CutPrefix(importPath, modPath+"/")
}

func goList(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// TestLayoutTableNamesEveryPackage: each package of the module has a row
// in DESIGN.md's layout table, and each folder the table names exists.
func TestLayoutTableNamesEveryPackage(t *testing.T) {
	t.Parallel()
	rows := layoutTable(t)
	var missing []string
	for pkg := range importGraph(t) {
		if kindOf(rows, pkg) == "" {
			missing = append(missing, pkg)
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "packages without a row in docs/DESIGN.md's layout table:\n%s", strings.Join(missing, "\n"))
	for _, r := range rows {
		for _, f := range r.folders {
			fi, err := os.Stat(filepath.Join("..", strings.TrimSuffix(f, "/...")))
			require.NoError(t, err, "the layout table names folder %s", f)
			require.True(t, fi.IsDir(), "the layout table names %s, which is not a folder", f)
		}
	}
}

// TestNoImportAgainstTheLayers: decisions import no store, host or
// transport; stores no host (their tests may); nothing under runtime/ a
// host; and the stile command no test module. Kinds are the table's.
func TestNoImportAgainstTheLayers(t *testing.T) {
	t.Parallel()
	rows := layoutTable(t)
	graph := importGraph(t)
	kindIn := func(kinds ...string) func(string) bool {
		return func(pkg string) bool { return slices.Contains(kinds, kindOf(rows, pkg)) }
	}
	under := func(folder string) func(string) bool {
		return func(pkg string) bool { return covers(folder+"/...", pkg) }
	}
	rules := []struct {
		name         string
		from, banned func(pkg string) bool
	}{
		{"a decision imports no store, host or transport", kindIn("decision"), kindIn("store", "host", "transport")},
		{"a store imports no host", kindIn("store"), under("host")},
		{"nothing under runtime/ imports a host", under("runtime"), under("host")},
		{"the stile command links no test module", under("cmd/stile"), under("e2e")},
	}
	var broken []string
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		for _, r := range rules {
			if !r.from(pkg) {
				continue
			}
			for _, chain := range chainsTo(graph, pkg, r.banned) {
				broken = append(broken, r.name+": "+strings.Join(chain, " → "))
			}
		}
	}
	require.Empty(t, broken, "imports against the layers:\n%s", strings.Join(broken, "\n"))
}

// chainsTo finds, for each package reachable from pkg that banned names,
// one chain of imports that reaches it (breadth first: a shortest one).
func chainsTo(graph map[string][]string, pkg string, banned func(string) bool) [][]string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	var chains [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range graph[p] {
			if _, seen := from[dep]; seen {
				continue
			}
			from[dep] = p
			queue = append(queue, dep)
			if banned(dep) {
				chain := []string{dep}
				for at := p; at != ""; at = from[at] {
					chain = append([]string{at}, chain...)
				}
				chains = append(chains, chain)
			}
		}
	}
	return chains
}
