package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
)

// benchCommands prints a command's latency on aggregates of growing
// history, under stile dev (open) and in workerd: with snapshots, a
// command reads the state and the events since, not the whole stream.
func benchCommands(ctx context.Context, dir string, wasm []byte, open func() (*host.Manager, error), n int, histories []int) error {
	fmt.Printf("commands on an aggregate as its history grows (%d commands each, the built-in counter)\n", n)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  host\tevents before\tp50\tp90\t")
	row := func(where string, d bench.Driver) error {
		for i, h := range histories {
			lat, err := bench.CommandLatencies(ctx, d, fmt.Sprintf("bench-%d", i), h, n)
			if err != nil {
				return fmt.Errorf("commands, %s, history %d: %w", where, h, err)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t\n", where, h, bench.Percentile(lat, 50).Round(10*time.Microsecond),
				bench.Percentile(lat, 90).Round(10*time.Microsecond))
		}
		return nil
	}
	m, err := open()
	if err != nil {
		return err
	}
	err = row("stile dev", bench.InProcess{M: m})
	m.Close()
	if err != nil {
		return err
	}
	srv, err := startWorkerd(dir, "commands", wasm)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close()
		if err := row("workerd", bench.HTTP{C: client.New(srv.URL, benchToken, &http.Client{Transport: &http.Transport{}})}); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println()
	return nil
}
