package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// ortEvent is one event of ONNX Runtime's profile (chrome trace format).
type ortEvent struct {
	Cat  string `json:"cat"`
	Name string `json:"name"`
	Dur  int64  `json:"dur"` // µs, wall clock
	Args struct {
		OpName string `json:"op_name"`
	} `json:"args"`
}

// printORTProfile summarizes the profiles ONNX Runtime wrote under prefix
// (one file per session): per session, its Runs and their total time, and
// the nodes taking the most time, over all sessions. The times are wall
// clock, so on a busy machine they include time spent waiting for a core;
// the shares are what they are for.
func printORTProfile(prefix string) error {
	files, err := filepath.Glob(prefix + "_*.json")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no ONNX Runtime profiles %s_*.json (%v)", prefix, err)
	}
	type session struct {
		name       string
		runs       int
		run, nodes int64
	}
	var sessions []session
	nodes := map[string]int64{}
	var all int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var events []ortEvent
		if err := json.Unmarshal(b, &events); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		s := session{name: filepath.Base(f)}
		var top string
		var topDur int64
		per := map[string]int64{}
		for _, e := range events {
			switch {
			case e.Cat == "Session" && e.Name == "model_run":
				s.runs++
				s.run += e.Dur
			case e.Cat == "Node" && strings.HasSuffix(e.Name, "_kernel_time"):
				n := e.Args.OpName + " " + strings.TrimSuffix(e.Name, "_kernel_time")
				per[n] += e.Dur
				s.nodes += e.Dur
			}
		}
		for n, d := range per {
			nodes[n] += d
			if d > topDur {
				top, topDur = n, d
			}
		}
		all += s.nodes
		s.name += " (most: " + top + ")"
		sessions = append(sessions, s)
	}
	slices.SortFunc(sessions, func(a, b session) int { return cmp.Compare(b.run, a.run) })
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nONNX Runtime session\truns\trun ms (wall)\tshare of all nodes\t")
	for _, s := range sessions {
		fmt.Fprintf(w, "%s\t%d\t%.1f\t%.1f %%\t\n", s.name, s.runs, float64(s.run)/1e3, 100*float64(s.nodes)/float64(all))
	}
	w.Flush()
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(nodes[b], nodes[a]) })
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nnode (all sessions)\tms (wall)\tshare\t")
	for _, n := range names[:min(15, len(names))] {
		fmt.Fprintf(w, "%s\t%.1f\t%.1f %%\t\n", n, float64(nodes[n])/1e3, 100*float64(nodes[n])/float64(all))
	}
	return w.Flush()
}
