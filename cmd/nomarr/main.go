// Command nomarr is the one production binary. This build carries the
// simulator subcommand; the daemon, one-shot tagging, worker and admin
// subcommands arrive with the production runtime.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: nomarr <command> [arguments]

commands:
  tag DIR [--workers N] [--db sqlite:PATH] [--analyzer noop]
        scan DIR and tag every file with N worker processes; exit 1 if files failed
  serve [--library-root DIR] [--http-addr 127.0.0.1:8356]
        daemon: scan and rescan, workers, health monitor, HTTP API and dashboard
  status [--json]
        the daemon's workers and the library counts
  workers pause|resume|reset [ID]
        pause or resume every worker sharing the store; reset a failed worker
  scan DIR
        add DIR's audio files to the library

configuration: flags (--key value) > NOMARR_<KEY> environment > config.yaml;
invalid configuration exits 2 with a message naming the key.
  sim SCENARIO [--seed N] [--json] [--no-check]
        run a scenario in the deterministic simulator; prints the JSONL trace
        (with --json) and a summary; exits 1 when an expectation fails, 2 when
        the scenario is invalid
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "sim":
		return runSim(args[1:], stdout, stderr)
	case "tag":
		return runTag(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "status":
		return runStatus(args[1:], stdout, stderr)
	case "workers":
		return runWorkers(args[1:], stdout, stderr)
	case "scan":
		return runScan(args[1:], stdout, stderr)
	case "worker": // hidden: started by a main process
		return runWorker(args[1:], stderr)
	case "drill": // hidden: real-process playback of a scenario
		return runDrill(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "nomarr: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
