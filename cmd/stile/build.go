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

	"github.com/stile-run/stile/internal/wasmbuild"

	"github.com/stile-run/stile/host/workerd"
)

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stile build [flags] [pkg]\n\nBuilds pkg's tenant module (default: the built-in module) to <out>/tenant.wasm and writes\nthe Worker bundle beside it, which wrangler.toml deploys.\n\nflags:")
		fs.PrintDefaults()
	}
	out := fs.String("out", "build", "output directory")
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
	fmt.Printf("wrote %s:\n", *out)
	for _, name := range []string{workerd.EntryFile, workerd.ABIFile, workerd.ConfigFile, workerd.WasmFile} {
		b, err := os.ReadFile(filepath.Join(*out, name))
		if err != nil {
			return err
		}
		fmt.Printf("  %-12s %9d bytes %9d gzip -9\n", name, len(b), gzipSize(b))
	}
	fmt.Printf("\nCloudflare's script limit is 3 MB (free plan) or 10 MB (paid), compressed.\n" +
		"deploy (wrangler needs Node >= 22.12):\n  npx wrangler secret put STILE_TOKEN\n  npx wrangler deploy\n")
	return nil
}

func gzipSize(b []byte) int {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Len()
}
