package printf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listed is the part of `go list -json` the guard reads.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Export     string
	Module     *struct{ Path string }
}

// goList lists patterns and their dependencies, with export data, for
// the environment env (nil: the native build).
func goList(t *testing.T, env []string, patterns ...string) map[string]*listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json", "-export", "-deps", "--"}, patterns...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	pkgs := map[string]*listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// call is one call of a formatting function found in the sources.
type call struct {
	pos    string
	fn     string
	format string
	args   []types.Type
}

// formatCalls type-checks the Stile packages among pkgs (their non-test
// files) and returns every call of a function in funcs (full names such
// as "fmt.Sprintf") with a constant format, and every call of a wrapper:
// a function whose last parameters are (format string, args ...any) and
// that passes them on to one. A non-constant format that is not a
// wrapper's own parameter is reported as an error.
func formatCalls(t *testing.T, pkgs map[string]*listed, funcs ...string) []call {
	t.Helper()
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := pkgs[path]
		if !ok || p.Export == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(p.Export)
	})
	type checked struct {
		files []*ast.File
		info  *types.Info
	}
	var paths []string
	for path, p := range pkgs {
		if p.Module != nil && p.Module.Path == "github.com/stile-run/stile" {
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	var all []checked
	for _, path := range paths {
		p := pkgs[path]
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		_, _ = conf.Check(path, fset, files, info) // errors (e.g. cgo) leave the rest checked
		all = append(all, checked{files, info})
	}
	known := map[string]bool{}
	for _, f := range funcs {
		known[f] = true
	}
	callee := func(info *types.Info, c *ast.CallExpr) *types.Func {
		var id *ast.Ident
		switch fn := c.Fun.(type) {
		case *ast.Ident:
			id = fn
		case *ast.SelectorExpr:
			id = fn.Sel
		default:
			return nil
		}
		f, _ := info.Uses[id].(*types.Func)
		return f
	}
	// wrappers: grow the known set until no function is added.
	for changed := true; changed; {
		changed = false
		for _, c := range all {
			for _, f := range c.files {
				for _, d := range f.Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || fd.Body == nil {
						continue
					}
					fn, _ := c.info.Defs[fd.Name].(*types.Func)
					if fn == nil || known[fn.FullName()] {
						continue
					}
					sig := fn.Type().(*types.Signature)
					n := sig.Params().Len()
					if !sig.Variadic() || n < 2 || sig.Params().At(n-2).Type() != types.Typ[types.String] {
						continue
					}
					format := sig.Params().At(n - 2)
					ast.Inspect(fd.Body, func(x ast.Node) bool {
						ce, ok := x.(*ast.CallExpr)
						if !ok || ce.Ellipsis == token.NoPos {
							return true
						}
						if g := callee(c.info, ce); g != nil && known[g.FullName()] {
							if id, ok := ce.Args[len(ce.Args)-2].(*ast.Ident); ok && c.info.Uses[id] == format {
								known[fn.FullName()] = true
								changed = true
							}
						}
						return true
					})
				}
			}
		}
	}
	var calls []call
	for _, c := range all {
		for _, f := range c.files {
			ast.Inspect(f, func(x ast.Node) bool {
				ce, ok := x.(*ast.CallExpr)
				if !ok {
					return true
				}
				g := callee(c.info, ce)
				if g == nil || !known[g.FullName()] {
					return true
				}
				sig := g.Type().(*types.Signature)
				fi := sig.Params().Len() - 2
				if fi >= len(ce.Args) {
					return true
				}
				pos := fset.Position(ce.Pos()).String()
				tv := c.info.Types[ce.Args[fi]]
				if tv.Value == nil || tv.Value.Kind() != constant.String {
					if ce.Ellipsis == token.NoPos {
						t.Errorf("%s: %s's format is not a constant", pos, g.FullName())
					}
					return true // a wrapper passing its own format on
				}
				cl := call{pos: pos, fn: g.FullName(), format: constant.StringVal(tv.Value)}
				for _, a := range ce.Args[fi+1:] {
					cl.args = append(cl.args, c.info.Types[a].Type)
				}
				calls = append(calls, cl)
				return true
			})
		}
	}
	return calls
}

const printfPkg = "github.com/stile-run/stile/internal/printf"

// moduleDeps lists the tenant module's packages (the default app's, for
// wasip1) with their dependencies.
func moduleDeps(t *testing.T) map[string]*listed {
	return goList(t, []string{"GOOS=wasip1", "GOARCH=wasm"}, "./cmd/stile/defaultapp")
}

// TestModulePackagesDoNotImportFmt: the Stile packages compiled into the
// tenant module format with printf (fmt's other importers in the module's
// dependencies, encoding/json, encoding/hex and runtime/debug, call it in
// no function the module links: TestModuleLinksNoFmt).
func TestModulePackagesDoNotImportFmt(t *testing.T) {
	for path, p := range moduleDeps(t) {
		if p.Module == nil || p.Module.Path != "github.com/stile-run/stile" || strings.HasPrefix(path, "github.com/stile-run/stile/cmd/") {
			continue
		}
		require.NotContains(t, p.Imports, "fmt", "%s imports fmt: format with %s", path, printfPkg)
	}
}

// TestCallsSupported checks every call of printf.Sprintf, printf.Errorf and of
// the functions that pass their format on to them (api.Refuse...), in the
// repository's packages for wasip1 and natively: the format is a constant
// whose verbs printf supports, without flags, one argument per verb, each of
// a type printf prints as fmt does.
func TestCallsSupported(t *testing.T) {
	var calls []call
	calls = append(calls, formatCalls(t, moduleDeps(t), printfPkg+".Sprintf", printfPkg+".Errorf")...)
	calls = append(calls, formatCalls(t, goList(t, nil, "./..."), printfPkg+".Sprintf", printfPkg+".Errorf")...)
	require.Greater(t, len(calls), 300, "the guard sees the calls")
	seen := map[string]bool{}
	for _, c := range calls {
		if seen[c.pos] {
			continue // a package in both builds
		}
		seen[c.pos] = true
		verbs, err := verbsOf(c.format)
		if err != nil {
			t.Errorf("%s: %s(%q): %v", c.pos, c.fn, c.format, err)
			continue
		}
		if len(verbs) != len(c.args) {
			t.Errorf("%s: %s(%q): %d verbs, %d arguments", c.pos, c.fn, c.format, len(verbs), len(c.args))
			continue
		}
		for i, v := range verbs {
			if why := unsupported(v, c.args[i], strings.HasSuffix(c.fn, ".Sprintf")); why != "" {
				t.Errorf("%s: %s(%q): argument %d (%s) for %%%c: %s", c.pos, c.fn, c.format, i+1, c.args[i], v, why)
			}
		}
	}
}

var (
	errorType    = types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	stringerType = types.NewInterfaceType([]*types.Func{types.NewFunc(token.NoPos, nil, "String",
		types.NewSignatureType(nil, nil, nil, nil, types.NewTuple(types.NewVar(token.NoPos, nil, "", types.Typ[types.String])), false))}, nil).Complete()
)

// unsupported says why printf would not print an argument of type ty for
// verb as fmt does ("" if it would).
func unsupported(verb rune, ty types.Type, sprintf bool) string {
	if verb == 'T' {
		return ""
	}
	if obj, _, _ := types.LookupFieldOrMethod(ty, true, nil, "Format"); obj != nil {
		if _, ok := obj.(*types.Func); ok {
			return "its type has a Format method (fmt.Formatter), which printf does not call"
		}
	}
	isErr, isStringer := types.Implements(ty, errorType), types.Implements(ty, stringerType)
	if verb == 'w' {
		if sprintf || !isErr {
			return "%w takes an error, in Errorf"
		}
		return ""
	}
	if _, ok := ty.Underlying().(*types.Interface); ok && !isErr && !isStringer {
		if verb == 'v' || verb == 's' {
			return "" // an interface: its dynamic value is printed as printf can (a recovered panic)
		}
		return "an interface takes %v or %s"
	}
	if isErr || isStringer {
		if verb == 's' || verb == 'v' || verb == 'q' {
			return ""
		}
		return "an error or Stringer takes %s, %v or %q (convert the value for another verb)"
	}
	b, basic := ty.(*types.Basic) // an unnamed basic type: a named one would need reflection
	switch {
	case basic && b.Kind() == types.String:
		if verb == 's' || verb == 'v' || verb == 'q' {
			return ""
		}
	case basic && b.Info()&types.IsInteger != 0:
		if verb == 'd' || verb == 'v' || verb == 'c' || verb == 'q' {
			return ""
		}
	case basic && b.Kind() == types.Bool:
		if verb == 't' || verb == 'v' {
			return ""
		}
	case basic && b.Info()&types.IsFloat != 0:
		if verb == 'v' {
			return ""
		}
	case types.Identical(ty, types.NewSlice(types.Typ[types.Byte])):
		if verb == 's' || verb == 'q' || verb == 'v' {
			return ""
		}
	case types.Identical(ty, types.NewSlice(types.Typ[types.String])):
		if verb == 's' || verb == 'q' || verb == 'v' {
			return ""
		}
	default:
		return "printf prints no value of this type (convert a named string or integer: string(x), int64(x))"
	}
	return "this verb does not take this type"
}

// verbsOf returns the verbs of a format, and an error for what printf does
// not support: flags, width, precision, argument indexes, other verbs.
func verbsOf(f string) ([]rune, error) {
	var vs []rune
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i == len(f) {
			return nil, errors.New("a % ends the format")
		}
		switch c := f[i]; {
		case c == '%':
		case strings.IndexByte("sdqvwTct", c) >= 0:
			vs = append(vs, rune(c))
		default:
			return nil, fmt.Errorf("printf does not support %%%c (verbs: %%s %%d %%q %%v %%w %%T %%c %%t, no flags, width or precision)", c)
		}
	}
	return vs, nil
}

// TestModuleLinksNoFmt builds the default tenant module with its name
// section and requires that no function of fmt or internal/fmtsort
// survived linking: importing fmt costs nothing as long as no linked
// function calls it, and one call (here or in a dependency) brings back
// about 85 KB gzipped.
func TestModuleLinksNoFmt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tenant module")
	}
	out := filepath.Join(t.TempDir(), "m.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./cmd/stile/defaultapp")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	names := wasmFuncNames(t, b)
	require.Greater(t, len(names), 1000, "the module has a name section")
	for _, n := range names {
		require.False(t, strings.HasPrefix(n, "fmt.") || strings.HasPrefix(n, "internal_fmtsort."), "the module links %s", n)
	}
}

// wasmFuncNames returns the function names of a Wasm module's name section.
func wasmFuncNames(t *testing.T, b []byte) []string {
	t.Helper()
	uleb := func(i int) (uint64, int) {
		var r uint64
		for s := 0; ; s += 7 {
			require.Less(t, i, len(b), "truncated module")
			c := b[i]
			i++
			r |= uint64(c&0x7f) << s
			if c < 0x80 {
				return r, i
			}
		}
	}
	require.True(t, len(b) > 8 && string(b[:4]) == "\x00asm", "not a Wasm module")
	var names []string
	for i := 8; i < len(b); {
		id := b[i]
		n, j := uleb(i + 1)
		end := j + int(n)
		if id == 0 {
			l, k := uleb(j)
			if string(b[k:k+int(l)]) == "name" {
				for k += int(l); k < end; {
					sub := b[k]
					sl, m := uleb(k + 1)
					next := m + int(sl)
					if sub == 1 { // function names
						cnt, m := uleb(m)
						for ; cnt > 0; cnt-- {
							_, m = uleb(m)
							var nl uint64
							nl, m = uleb(m)
							names = append(names, string(b[m:m+int(nl)]))
							m += int(nl)
						}
					}
					k = next
				}
			}
		}
		i = end
	}
	return names
}
