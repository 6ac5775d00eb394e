package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/worker"
	"github.com/nomarr/nomarr/sim/scripted"
)

// runWorker implements the hidden `nomarr worker`: it is started by a main
// process with the frame pipe on fd 3 and the control pipe on fd 4.
func runWorker(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	component := fs.String("component", "", "component id")
	workerID := fs.String("worker-id", "", "instance-qualified worker id")
	node := fs.String("node", "", "the host's node name (its GPU health is gpu:health:<node>)")
	if err := fs.Parse(args); err != nil || *component == "" || *workerID == "" {
		fmt.Fprintln(stderr, "nomarr worker: --component and --worker-id are required (a worker is started by its main process)")
		return 2
	}
	code, err := app.RunWorker(app.WorkerArgs{Component: *component, WorkerID: *workerID, Node: *node, Script: scriptAnalyzer}, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr worker:", err)
		return 2
	}
	return code
}

// scriptAnalyzer is the drills' script analyzer (analyzer script:SCENARIO).
func scriptAnalyzer(scenario, stateDir string) (worker.Analyzer, error) {
	return scripted.NewScript(scenario, stateDir)
}
