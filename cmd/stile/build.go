package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stile-run/stile/api"
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
	name := fs.String("name", "stile", "the Worker's name in the wrangler config written with --handlers")
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
	if err := workerd.WriteWorker(*out, wasm); err != nil {
		return err
	}
	files := []string{workerd.EntryFile, workerd.ABIFile, workerd.ConfigFile, workerd.WasmFile}
	if *handlers != "" {
		if !api.ValidTenant(*name) {
			return fmt.Errorf("--name %q: a Worker name is lower-case letters, digits and '-'", *name)
		}
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
		if err := os.WriteFile(filepath.Join(*out, "wrangler.toml"), []byte(workerd.EdgeWrangler(*name)), 0o644); err != nil {
			return err
		}
		files = append(files, workerd.EdgeEntryFile, workerd.ShimFile, workerd.WasmExecFile, workerd.ExecutorFile, "wrangler.toml")
	}
	fmt.Printf("wrote %s:\n", *out)
	var all bytes.Buffer
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(*out, name))
		if err != nil {
			return err
		}
		fmt.Printf("  %-14s %9d bytes %9d gzip -9\n", name, len(b), gzipSize(b))
		if name != "wrangler.toml" {
			all.Write(b)
		}
	}
	fmt.Printf("  %-14s %9d bytes %9d gzip -9\n", "(script)", all.Len(), gzipSize(all.Bytes()))
	fmt.Printf("\nCloudflare's script limit is 3 MB (free plan) or 10 MB (paid), compressed.\n")
	if *handlers != "" {
		fmt.Printf("deploy the Worker with its edge executor (wrangler needs Node >= 22.12):\n"+
			"  npx wrangler secret put STILE_TOKEN -c %[1]s/wrangler.toml\n  npx wrangler deploy -c %[1]s/wrangler.toml\n", *out)
		return nil
	}
	fmt.Printf("deploy (wrangler needs Node >= 22.12):\n  npx wrangler secret put STILE_TOKEN\n  npx wrangler deploy\n")
	return nil
}

func gzipSize(b []byte) int {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Len()
}
