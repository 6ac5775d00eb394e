package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/sim"
)

// runSim implements `nomarr sim SCENARIO [--seed N] [--json]`.
func runSim(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "override the scenario's seed (any value, 0 included)")
	asJSON := fs.Bool("json", false, "print the JSONL trace on stdout (the summary goes to stderr)")
	noCheck := fs.Bool("no-check", false, "skip the safety invariants checked after every event")
	// Accept flags before or after the file name.
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		args = fs.Args()
		if len(args) > 0 {
			files = append(files, args[0])
			args = args[1:]
		}
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "usage: nomarr sim SCENARIO [--seed N] [--json]")
		return 2
	}
	sc, err := sim.Load(files[0])
	if err != nil {
		fmt.Fprintln(stderr, "nomarr sim:", err)
		return 2
	}
	// sim.Options.Seed overrides only when non-zero, so an explicit --seed
	// (0 included) replaces the scenario's own seed instead.
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			sc.Seed = *seed
		}
	})
	opt := sim.Options{Check: !*noCheck}
	summaryOut := stdout
	var bw *bufio.Writer
	if *asJSON {
		bw = bufio.NewWriter(stdout)
		opt.Trace = bw
		summaryOut = stderr
	}
	res, err := sim.Run(sc, opt)
	if bw != nil {
		bw.Flush()
	}
	if err != nil {
		fmt.Fprintln(stderr, "nomarr sim:", err)
		return 2
	}
	res.WriteSummary(summaryOut)
	if len(res.Failures) > 0 {
		return 1
	}
	return 0
}
