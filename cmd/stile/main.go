package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

const usage = `usage: stile <command> [flags] [args]

commands:
  dev [pkg]     serve a tenant module locally on 127.0.0.1:8787 (wazero, one SQLite file per tenant)
  build [pkg]   build build/tenant.wasm and the Worker bundle that wrangler.toml deploys
  work          run a worker with the handlers of --handlers PKG (in Stile's module: the built-in ones)
  bench         measure jobs/s and latency natively, under wazero and over HTTP
  new           write a new Stile app: module, handlers, tests, README
  deploy        wrangler deploy, with a Node and wrangler it finds or installs
  wrangler      any wrangler command the same way (e.g. secret put STILE_TOKEN)

operate a deployment (stile dev or a Worker; --url, --token, --tenant, --json):
  jobs          list (the default) | show ID (the timeline: attempts, refused reports, why it ran again) | retry | cancel | delete
  queues        counts per queue and state; pause | resume QUEUE
  rates         rate limits per key: starts in the window, when it opens; set KEY LIMIT PERIOD | delete KEY
  failing       what is failing now, in a tenant or across tenants: jobs by kind and error, reactions, projections
  schedules     periodic jobs, the tenant's and the module's; set NAME CRON --kind K | delete | pause | resume NAME
  reactions     lag and open deliveries; skip HANDLER SEQ --reason WHY
  projections   status, lag, errors; rebuild NAME
  query         run a registered query (NAME k=v …); --min-seq N waits until its projection applied seq N
  events        the event log, or one stream
  tenants       the tenant directory
  usage         what a tenant used by UTC day (--tenant), or the fleet's latest day
  budget        a tenant's daily budget (--rows-written N --requests N, or --clear)
  migrate       apply pending migrations (and retry failed ones) in one tenant or all
  export        a tenant's state, one JSON page a line (--out FILE); import --in FILE into an empty tenant
  token         mint a scoped token (--scope, --role, --ttl), revoke one, or make a secret (docs/SECURITY.md)
  version       print the version

Exit codes: 0 done, 2 usage, 3 refused, 4 not found, 5 unreachable, 1 anything else.

Run 'stile <command> -h' for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "dev":
		err = runDev(args)
	case "build":
		err = runBuild(args)
	case "work":
		err = runWork(args)
	case "bench":
		err = runBench(args)
	case "new":
		err = runNew(args)
	case "deploy":
		err = runDeploy(args)
	case "jobs":
		err = runJobs(args)
	case "queues":
		err = runQueues(args)
	case "rates":
		err = runRates(args)
	case "schedules":
		err = runSchedules(args)
	case "failing":
		err = runFailing(args)
	case "reactions":
		err = runReactions(args)
	case "projections":
		err = runProjections(args)
	case "query":
		err = runQuery(args)
	case "events":
		err = runEvents(args)
	case "tenants":
		err = runTenants(args)
	case "usage":
		err = runUsage(args)
	case "budget":
		err = runBudget(args)
	case "migrate":
		err = runMigrate(args)
	case "export":
		err = runExport(args)
	case "import":
		err = runImport(args)
	case "token":
		err = runToken(args)
	case "wrangler":
		err = runWrangler(args)
	case "version", "-version", "--version":
		fmt.Println(version())
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "stile: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the command printed its usage, as asked
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "stile %s: %v\n", os.Args[1], err)
		os.Exit(max(exitCode(err), 1))
	}
}

func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
		return "stile " + v + " (" + bi.GoVersion + ")"
	}
	return "stile " + v
}
