package sim

import (
	"testing"

	"github.com/nomarr/nomarr/core/event"
)

// The two-workers-at-once check reads the simulator's own state of the
// first worker's process (running the job on the file, or loading the
// models for the file of its last claim), never the core worker's Holding:
// a core bug in what a worker reports holding cannot hide a double job. A
// process that is done with the file (its result write pending, say) no
// longer analyses it. The events are fed by hand.
func TestCheckerOnFileUsesTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		busy busy
		want bool
	}{
		{"running", running, true},
		{"loading", loading, true},
		{"free", free, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkedWorld(t, oneFileTwoHosts)
			w.Run()
			var holder, other *Instance
			for _, in := range w.Instances {
				if p := in.procs["worker:discovery:0"]; p.busy == running && p.job.FileKey == "f0000" {
					holder = in
				} else {
					other = in
				}
			}
			if holder == nil || other == nil {
				t.Fatal("setup: want exactly one of the two processes running f0000")
			}
			hp := holder.procs["worker:discovery:0"]
			hp.busy = tc.busy
			hid := holder.node.Sup.WorkerID("worker:discovery:0")
			oid := other.node.Sup.WorkerID("worker:discovery:0")
			w.record(event.Event{Event: event.LeaseExpired, Instance: other.ID, File: "f0000", Worker: hid})
			w.record(event.Event{Event: event.Claim, Instance: other.ID, Component: "worker:discovery:0", File: "f0000", Worker: oid})
			if got := hasViolation(w.check.violations, "two workers analyse f0000"); got != tc.want {
				t.Errorf("flagged=%v, want %v: %v", got, tc.want, w.check.violations)
			}
		})
	}
}
