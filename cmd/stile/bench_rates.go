package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
)

// ratesConfig is the rate-limit measurement's size.
type ratesConfig struct {
	keys, perKey int // rate keys, and jobs under each
	limit        int64
	period       time.Duration
	unlimited    int // jobs without a key, in both runs
	concurrency  int // the worker's handlers
	runs         int // pairs of runs
}

// benchRates measures rate limits as a worker meets them: the worker
// library long-polling one tenant on a host like stile dev (alarms on:
// they wake the claims when a key opens) drains cfg.unlimited no-op jobs
// alone (run A), and the same beside cfg.keys rate keys of cfg.perKey
// jobs each (run B), in alternating pairs on fresh hosts. It prints how
// each key kept its limit (the most starts in any window of the period,
// and the starts per whole period, from the server's claim times), and
// the rate of the jobs without a key in run B against run A.
func benchRates(ctx context.Context, open func() (*host.Manager, error), cfg ratesConfig) error {
	fmt.Printf("rate limits: the worker library (%d handlers, long-polling one tenant), stile dev (wazero, alarms on), loopback HTTP; "+
		"%d keys of %d starts per %s, %s no-op jobs each, enqueued interleaved with %s jobs without a key (run B), "+
		"against those %s alone (run A); %d alternating pairs of runs, times the server's (claims and finishes)\n",
		cfg.concurrency, cfg.keys, cfg.limit, cfg.period, commas(cfg.perKey), commas(cfg.unlimited), commas(cfg.unlimited), cfg.runs)
	var alone, beside []bench.RatesResult
	for run := range cfg.runs {
		for i := range 2 {
			keys := 0
			if (run+i)%2 == 1 {
				keys = cfg.keys
			}
			r, err := ratesOnce(ctx, open, bench.RatesConfig{Token: benchToken, Tenant: "rates", Keys: keys, PerKey: cfg.perKey,
				Limit: cfg.limit, Period: cfg.period, Unlimited: cfg.unlimited, Concurrency: cfg.concurrency})
			if err != nil {
				return fmt.Errorf("rates, run %d: %w", run, err)
			}
			if keys == 0 {
				alone = append(alone, r)
			} else {
				beside = append(beside, r)
			}
		}
	}

	period := cfg.period.Milliseconds()
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  key\tstarts\tmost in any %s\tper whole %s: min\tmean\tof the limit\tfirst → last start\t\n", cfg.period, cfg.period)
	worst := 0
	var allSeconds []int
	for k := range cfg.keys {
		starts, most := 0, 0
		var periods []int
		var spans []float64
		for _, r := range beside {
			ks := r.Keys[k]
			if int64(len(ks.Starts)) != ks.Started {
				return fmt.Errorf("rates: key %s counted %d starts, its jobs' attempts %d", ks.Key, ks.Started, len(ks.Starts))
			}
			starts += len(ks.Starts)
			most = max(most, bench.MaxInWindow(ks.Starts, period))
			periods = append(periods, bench.PerPeriod(ks.Starts, period)...)
			if len(ks.Starts) > 0 {
				spans = append(spans, float64(ks.Starts[len(ks.Starts)-1]-ks.Starts[0]))
			}
		}
		worst = max(worst, most)
		allSeconds = append(allSeconds, periods...)
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", bench.RateKey(k), commas(starts), most, minOf(periods), meanOf(periods),
			shareOf(periods, cfg.limit), time.Duration(median(spans))*time.Millisecond)
	}
	fmt.Fprintf(tw, "  every key\t\t%d\t%s\t%s\t%s\t\t\n", worst, minOf(allSeconds), meanOf(allSeconds), shareOf(allSeconds, cfg.limit))
	tw.Flush()

	var rateA, rateB, share, whole, wholeShare, took []float64
	for i := range beside {
		a, b := alone[i].UnlimitedRate(), beside[i].UnlimitedRate()
		w := float64(beside[i].Unlimited+beside[i].RatedMeanwhile()) / (float64(max(beside[i].UnlimitedEnd-beside[i].First, 1)) / 1000)
		rateA, rateB, share = append(rateA, a), append(rateB, b), append(share, 100*b/a)
		whole, wholeShare = append(whole, w), append(wholeShare, 100*w/a)
		took = append(took, float64(beside[i].End-beside[i].First)/1000)
	}
	fmt.Printf("  jobs without a key: alone %.0f jobs/s (runs %s); beside the rated, until the last of them finished, %.0f jobs/s (runs %s): %.1f%% of alone (runs %s)\n",
		median(rateA), rates(rateA), median(rateB), rates(rateB), median(share), percents(share))
	fmt.Printf("  the worker's whole rate meanwhile (those, and the rated jobs started until then): %.0f jobs/s (runs %s), %.1f%% of alone (runs %s)\n",
		median(whole), rates(whole), median(wholeShare), percents(wholeShare))
	fmt.Printf("  run B, the first start to the last finish: %.2fs (runs %s)\n\n", median(took), secondsOf(took))
	if worst > int(cfg.limit) {
		return fmt.Errorf("rates: a key started %d jobs in one window of %s, over its limit of %d", worst, cfg.period, cfg.limit)
	}
	return nil
}

func ratesOnce(ctx context.Context, open func() (*host.Manager, error), c bench.RatesConfig) (bench.RatesResult, error) {
	m, err := open()
	if err != nil {
		return bench.RatesResult{}, err
	}
	defer m.Close()
	h, stop, err := bench.Serve(m, benchToken)
	if err != nil {
		return bench.RatesResult{}, err
	}
	defer stop()
	c.URL = h.C.BaseURL()
	return bench.Rates(ctx, c)
}

func minOf(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	return strconv.Itoa(slices.Min(xs))
}

func meanOf(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return strconv.FormatFloat(float64(sum)/float64(len(xs)), 'f', 1, 64)
}

// shareOf is the mean of xs as a share of limit.
func shareOf(xs []int, limit int64) string {
	if len(xs) == 0 {
		return "-"
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return strconv.FormatFloat(100*float64(sum)/float64(len(xs))/float64(limit), 'f', 1, 64) + "%"
}

// percents prints shares in their order, to a tenth.
func percents(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'f', 1, 64) + "%"
	}
	return strings.Join(out, " ")
}

// secondsOf prints durations in seconds in their order.
func secondsOf(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'f', 2, 64) + "s"
	}
	return strings.Join(out, " ")
}
