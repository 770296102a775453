package main

import (
	"bytes"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"text/template"

	"github.com/stile-run/stile/internal/wasmbuild"
)

//go:embed all:template
var projectTemplate embed.FS

const stileModule = "github.com/stile-run/stile"

func runNew(args []string) error {
	fl := flag.NewFlagSet("new", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: stile new [flags] DIR\n\nWrites a Stile app into DIR (which must not exist, or be empty): a tenant module, its\nhandler package, tests using stiletest, a README from go test to wrangler deploy. Its\ngo.mod requires this build's Stile (a replace to the checkout for a development build)\nand runs it as `go tool stile`.\n\nflags:")
		fl.PrintDefaults()
	}
	module := fl.String("module", "", "the module path (default: example.com/<base of DIR>)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return errors.New("name the directory to write")
	}
	dir := fl.Arg(0)
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: stile new writes a new project", dir)
	}
	name := filepath.Base(filepath.Clean(dir))
	if *module == "" {
		*module = "example.com/" + strings.ToLower(name)
	}
	require, err := stileRequirement()
	if err != nil {
		return err
	}
	data := struct{ Module, Name string }{*module, name}
	err = fs.WalkDir(projectTemplate, "template", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := projectTemplate.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := template.New(p).Delims("[[", "]]").Parse(string(b))
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := t.Execute(&out, data); err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "template/"), ".tmpl")
		if rel == "gitignore" {
			rel = ".gitignore"
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, out.Bytes(), 0o644)
	})
	if err != nil {
		return fmt.Errorf("write the project: %w", err)
	}
	gomod := "module " + *module + "\n\ngo " + strings.TrimPrefix(goVersion(), "go") + "\n\n" + require +
		"\ntool github.com/stile-run/stile/cmd/stile\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	tidy := exec.Command(wasmbuild.GoTool(), "mod", "tidy")
	tidy.Dir = dir
	if out, err := tidy.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy in %s: %w\n%s", dir, err, out)
	}
	fmt.Printf("wrote %s (module %s)\n\nnext:\n  cd %s\n  go test ./...\n  go tool stile dev --handlers ./handlers ./tenant\n\nits README goes on to wrangler deploy.\n", dir, *module, dir)
	return nil
}

// stileRequirement is the go.mod lines that bring in this build's Stile:
// its release version, or a replace to the checkout it was built from.
func stileRequirement() (string, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("this stile has no build information: build it with go build or go install")
	}
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path != stileModule {
			continue
		}
		switch {
		case m.Replace != nil && m.Replace.Version == "": // a replace to a directory
			return localReplace(m.Replace.Path)
		case m.Replace != nil:
			return "require " + stileModule + " " + m.Replace.Version + "\n", nil
		case m.Version != "" && m.Version != "(devel)":
			return "require " + stileModule + " " + m.Version + "\n", nil
		}
	}
	// A development build in a checkout: the source file says where.
	_, file, _, ok := goruntime.Caller(0)
	if ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return localReplace(root)
		}
	}
	return "", errors.New("this stile is a development build whose checkout is unknown (built with -trimpath?): build it with go build in the checkout")
}

func localReplace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return "require " + stileModule + " v0.0.0-00010101000000-000000000000\n\nreplace " + stileModule + " => " +
		path.Clean(filepath.ToSlash(abs)) + "\n", nil
}

func goVersion() string {
	v := goruntime.Version()
	if i := strings.IndexAny(v, " -"); i >= 0 {
		v = v[:i]
	}
	return v
}
