package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stile-run/stile/host/workerd"
	"github.com/stile-run/stile/internal/wasmbuild"
)

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stile build [flags] [pkg]\n\nBuilds pkg's tenant module (default: the built-in module) to <out>/tenant.wasm and writes\nthe Worker bundle beside it, which wrangler.toml deploys. With --handlers, the bundle also\nruns that handler package as the edge executor, and <out>/wrangler.toml deploys it.\n\nflags:")
		fs.PrintDefaults()
	}
	out := fs.String("out", "build", "output directory")
	handlers := fs.String("handlers", "", "a handler package (exports Register(*worker.Worker)) to run as the edge executor")
	name := fs.String("name", "", "the Worker's name, in a wrangler config stile build creates (default: the current directory's name)")
	config := fs.String("config", "wrangler.toml", "the wrangler config stile build creates, or updates (only the keys Stile owns)")
	maxSize := fs.Int("max-size", 0, "fail if the tenant module is over this many bytes gzipped, writing nothing (0: no bound of your own)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return errors.New("at most one package")
	}
	wasmPath := filepath.Join(*out, workerd.WasmFile)
	if err := wasmbuild.BuildDeploy(context.Background(), ".", fs.Arg(0), wasmPath); err != nil {
		return err
	}
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	if gz := wasmbuild.GzipSize(wasm); *maxSize > 0 && gz > *maxSize {
		os.Remove(wasmPath)
		return fmt.Errorf("the tenant module is %d bytes gzipped, over --max-size %d%s", gz, *maxSize, largestPackages(fs.Arg(0)))
	}
	if err := workerd.WriteWorker(*out, wasm); err != nil {
		return err
	}
	files := []string{workerd.EntryFile, workerd.ABIFile, workerd.TokenFile, workerd.ConfigFile, workerd.ConsoleFile, workerd.WasmFile}
	if *handlers != "" {
		ctx := context.Background()
		if err := wasmbuild.BuildExecutor(ctx, ".", *handlers, wasmbuild.Edge, filepath.Join(*out, workerd.ExecutorFile)); err != nil {
			return err
		}
		if err := wasmbuild.WriteEdgeAssets(ctx, ".", *handlers, *out); err != nil {
			return err
		}
		if err := workerd.WriteEdge(*out); err != nil {
			return err
		}
		files = append(files, workerd.EdgeEntryFile, workerd.ShimFile, workerd.WasmExecFile, workerd.ExecutorFile)
	}
	action, err := writeConfig(*config, *out, *name, *handlers != "")
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s:\n", *out)
	var all bytes.Buffer
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(*out, name))
		if err != nil {
			return err
		}
		fmt.Printf("  %-14s %9d bytes %9d gzip -9\n", name, len(b), wasmbuild.GzipSize(b))
		all.Write(b)
	}
	script := wasmbuild.GzipSize(all.Bytes())
	fmt.Printf("  %-14s %9d bytes %9d gzip -9\n", "(script)", all.Len(), script)
	fmt.Println()
	if note, warn := planFor(script, *handlers != "", fs.Arg(0)); warn {
		fmt.Fprintln(os.Stderr, "stile build: warning:", note)
	} else {
		fmt.Println(note)
	}
	fmt.Printf("%s %s\n", action, *config)
	c := ""
	if *config != "wrangler.toml" {
		c = " -c " + *config
	}
	fmt.Printf("deploy (stile runs wrangler on a Node >= 22.12 it finds, or installs from npm):\n  stile wrangler secret put STILE_TOKEN%[1]s\n  stile deploy%[1]s\n", c)
	return nil
}

// writeConfig creates the wrangler config, or updates the keys Stile owns
// in the user's, for the bundle in out.
func writeConfig(config, out, name string, edge bool) (string, error) {
	entry := workerd.EntryFile
	if edge {
		entry = workerd.EdgeEntryFile
	}
	absConfig, err := filepath.Abs(config)
	if err != nil {
		return "", err
	}
	absEntry, err := filepath.Abs(filepath.Join(out, entry))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(filepath.Dir(absConfig), absEntry)
	if err != nil {
		return "", err
	}
	old, err := os.ReadFile(config)
	action := "updated"
	if errors.Is(err, os.ErrNotExist) {
		action, err = "wrote", nil
	}
	if err != nil {
		return "", err
	}
	if name == "" {
		name = workerName(filepath.Base(filepath.Dir(absConfig)))
	} else if workerName(name) != name {
		return "", fmt.Errorf("--name %q: a Worker's name is lower-case letters, digits and '-' (%q would do)", name, workerName(name))
	}
	b, err := workerd.UpdateWrangler(old, workerd.Wrangler{Name: name, Main: filepath.ToSlash(rel), Edge: edge})
	if err != nil {
		return "", fmt.Errorf("%s: %w", config, err)
	}
	if bytes.Equal(b, old) {
		return "kept", nil
	}
	return action, os.WriteFile(config, b, 0o644)
}

// planFor says which of Cloudflare's plans takes a script of gz bytes
// gzipped, and when the free plan does not take a script without edge
// handlers, why (a warning): the tenant module's largest packages, and
// net/http when the module links it (a handler or an HTTP client in its
// imports).
func planFor(gz int, handlers bool, pkg string) (note string, warn bool) {
	switch {
	case gz <= wasmbuild.FreeScriptLimit:
		return fmt.Sprintf("The script fits Cloudflare's free plan (%d bytes compressed) and the paid plan (%d).", wasmbuild.FreeScriptLimit, wasmbuild.PaidScriptLimit), false
	case handlers && gz <= wasmbuild.PaidScriptLimit:
		return fmt.Sprintf("The script needs the Workers Paid plan: over the free plan's %d bytes compressed, within the paid plan's %d. The edge executor is a Go program with net/http: it weighs more than the tenant module.", wasmbuild.FreeScriptLimit, wasmbuild.PaidScriptLimit), false
	}
	plan := "needs the Workers Paid plan: over the free plan's %d bytes compressed, within the paid plan's %d"
	if gz > wasmbuild.PaidScriptLimit {
		plan = "is over the free plan's %d bytes compressed and the paid plan's %d: no plan deploys it"
	}
	msg := "the script " + fmt.Sprintf(plan, wasmbuild.FreeScriptLimit, wasmbuild.PaidScriptLimit)
	if !handlers {
		msg += ", and the tenant module is most of it" + largestPackages(pkg)
	}
	return msg, true
}

// largestPackages lists the tenant module's largest packages, from an
// unstripped build's name section (go tool nm does not read Wasm), and
// names the usual cause of a heavy module when it is there: net/http ("" if
// the build fails).
func largestPackages(pkg string) string {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "stile-size-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(tmp)
	named := filepath.Join(tmp, "named.wasm")
	if err := wasmbuild.BuildWasm(ctx, ".", pkg, named); err != nil {
		return ""
	}
	b, _ := os.ReadFile(named)
	deps, derr := wasmbuild.Deps(ctx, ".", pkg)
	ps, perr := wasmbuild.PackageSizes(b, deps)
	if derr != nil || perr != nil {
		return ""
	}
	var why strings.Builder
	why.WriteString("; its largest packages (code, uncompressed):")
	http := false
	for i, p := range ps {
		if i < 12 {
			fmt.Fprintf(&why, "\n  %9d  %s", p.Bytes, p.Package)
		}
		http = http || p.Package == "net/http"
	}
	if http {
		why.WriteString("\nThe module links net/http: a handler package or an HTTP client is in its imports. Handlers and clients belong to the handler package, which runs in a worker or at the edge, not in the tenant's object.")
	} else {
		why.WriteString("\nGo's runtime and Stile's are most of any module; the packages of your own above are what you can make smaller.")
	}
	return why.String()
}

// workerName makes a directory's name a Worker name: lower-case letters,
// digits and '-'.
func workerName(dir string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(dir) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	if n := strings.Trim(b.String(), "-"); n != "" {
		return n
	}
	return "stile"
}
