package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/sim/drill"
)

// runDrill implements the hidden `nomarr drill SCENARIO --db PATH --trace
// FILE` (package sim/drill) and prints its summary as JSON.
func runDrill(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "sqlite:PATH of the store (required)")
	tracePath := fs.String("trace", "", "write the JSONL trace here")
	stateDir := fs.String("state", "", "directory for the script analyzer's counters (default: beside the db)")
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		args = fs.Args()
		if len(args) > 0 {
			files, args = append(files, args[0]), args[1:]
		}
	}
	if len(files) != 1 || *db == "" {
		fmt.Fprintln(stderr, "usage: nomarr drill SCENARIO --db sqlite:PATH [--trace FILE]")
		return 2
	}
	sum, err := drill.Run(drill.Options{Scenario: files[0], DB: *db, Trace: *tracePath, StateDir: *stateDir, Stderr: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "nomarr drill:", err)
		var usage *drill.UsageError
		if errors.As(err, &usage) {
			return 2
		}
		return 1
	}
	_ = json.NewEncoder(stdout).Encode(sum)
	return 0
}
