package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// The checker excuses a second worker's claim of a file that a live worker
// still analyses only when the first claim's lease was taken while its
// host was cut off from the store (or just back). A 1 s partition cannot
// make a lease expire (renewed every lease_ttl/3); a double analysis
// minutes after it healed has another cause (a renewal or cleanup bug) and
// is reported, as it is without any partition.
func TestCheckerExcusesOnlyLeasesLostToAPartition(t *testing.T) {
	y := oneFileTwoHosts
	for _, partition := range []bool{false, true} {
		t.Run(fmt.Sprintf("partition_1s=%v", partition), func(t *testing.T) {
			w := checkedWorld(t, y)
			w.Run()
			holder, other := holderAndOther(t, w)
			if partition {
				w.apply(&Fault{Partition: true, Instance: holder.Name})
				w.now = w.now.Add(time.Second)
				w.setPartitioned(holder.Name, false) // healed after 1 s
			}
			w.now = w.now.Add(5 * time.Minute) // long after the heal; the holder's owner renews all along
			hid := holder.node.Sup.WorkerID("worker:discovery:0")
			oid := other.node.Sup.WorkerID("worker:discovery:0")
			w.record(event.Event{Event: event.LeaseExpired, Instance: other.ID, File: "f0000", Worker: hid})
			w.record(event.Event{Event: event.Claim, Component: "worker:discovery:0", File: "f0000", Worker: oid})
			if !hasViolation(w.check.violations, "two workers analyse f0000 at once") {
				t.Errorf("double analysis 5 min after a 1 s partition healed not reported: %v", w.check.violations)
			}
		})
	}
}

// An orphan whose own renewal finds its claim gone abandons its job at once
// with exit code 0 (worker.OrphanAbandons), and the checker accepts that
// exit mid-job. Host a's main process dies, then a is cut off from the
// store for 2 min: its orphan's renewals fail, b's cleanup takes the claim,
// and after the heal the orphan's renewal finds it gone.
func TestCheckerAcceptsOrphanLeavingALostClaim(t *testing.T) {
	const y = `name: orphan-lost-claim
seed: 1
duration: 8m
instances: [a, b]
config: {workers: 1}
library: {files: 2, job_time: 10m}
faults:
  - {at: 10s, main: die, instance: a}
  - {at: 20s, partition: true, instance: a, for: 2m}
`
	w := checkedWorld(t, y)
	res := w.Run()
	lost := false
	for _, r := range res.Trace {
		if r.Event.Event == event.WorkerExit && r.Event.Instance == "a:1" {
			t.Logf("a's worker exit: code %v, %s", *r.Event.Code, r.Event.Reason)
			lost = lost || strings.Contains(r.Event.Reason, "lost")
		}
	}
	if !lost {
		t.Fatal("setup: the orphan did not abandon a lost claim")
	}
	if hasViolation(w.check.violations, "exited mid-job") {
		t.Errorf("the orphan's legitimate abandonment of a lost claim is reported as a violation: %v", w.check.violations)
	}
}
