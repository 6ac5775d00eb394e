package main

import (
	"bufio"
	"errors"
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
	files, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, "sim", fs)
		return 0
	}
	if err != nil {
		return reportFlagError(stderr, "sim", fs, err)
	}
	if len(files) != 1 {
		return usageError(stderr, "sim")
	}
	if !pathArgOK(stderr, "sim", "SCENARIO", files[0]) {
		return exitUsage
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
