package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// The crash model counts a death against the files its worker held unless
// the death came during a stop, and wants the quarantine exactly when the
// count reaches quarantine_after. The owner's events are fed by hand, so
// the test does not depend on the core producing them.
func TestCheckerCrashModel(t *testing.T) {
	for _, tc := range []struct {
		stop        bool
		count       int  // the released file's crash count per the fed release event
		quarantined bool // a quarantined event follows
		want        string
	}{
		{count: 1},
		{count: 0, want: "crash count 0, want 1"},
		{stop: true, count: 0},
		{stop: true, count: 1, want: "crash count 1, want 0"},
		{count: 1, quarantined: true, want: "quarantined (crash count 1) without"},
	} {
		t.Run(fmt.Sprintf("stop=%v,count=%d,quarantined=%v", tc.stop, tc.count, tc.quarantined), func(t *testing.T) {
			w := busyWorld(t, "crash-model")
			in := w.Instances[0]
			comp := "worker:discovery:0"
			wid := in.node.Sup.WorkerID(comp)
			if w.check.crash.count["f0000"] != 0 || len(w.check.violations) > 0 {
				t.Fatalf("setup: crash model %v, violations %v", w.check.crash.count, w.check.violations)
			}
			if tc.stop {
				w.record(event.Event{Event: event.Stop, Instance: in.ID})
			}
			w.record(event.Event{Event: event.Exit, Instance: in.ID, Component: comp, Code: event.IntPtr(-1), Reason: "hang: no frame for 30s"})
			w.record(event.Event{Event: event.Release, Instance: in.ID, Component: comp, File: "f0000", Worker: wid, Reason: "worker died", Count: tc.count})
			if tc.quarantined {
				w.record(event.Event{Event: event.Quarantined, Instance: in.ID, File: "f0000", Reason: quarantineReason(w), Count: tc.count})
			}
			w.check.afterEvent()
			wantViolation(t, w, tc.want)
		})
	}
}

// A release that brings a file to quarantine_after without quarantining it
// is flagged once the instant is over.
func TestCheckerWantsTheQuarantine(t *testing.T) {
	w := busyWorld(t, "crash-model")
	in := w.Instances[0]
	comp := "worker:discovery:0"
	w.check.crash.count["f0000"] = w.cfg.QuarantineAfter - 1
	w.record(event.Event{Event: event.Exit, Instance: in.ID, Component: comp, Code: event.IntPtr(-1), Reason: "SIGKILL"})
	w.record(event.Event{Event: event.Release, Instance: in.ID, Component: comp, File: "f0000", Worker: in.node.Sup.WorkerID(comp),
		Reason: "worker died", Count: w.cfg.QuarantineAfter})
	w.check.afterEvent()
	if !hasViolation(w.check.violations, "without being quarantined") {
		t.Errorf("want the missing quarantine flagged, got %v", w.check.violations)
	}
}

// A release made without an answer (a lost_reply fault per file) must be
// reported once the owner's release is answered: its `release` event with
// the crash count the store holds, and its `quarantined` event when it
// quarantined the file. The owner here never saw the death, so its
// release is not pending: the events are due at once. A repeated fault
// for the same file and worker (a retry answered from the receipt, the
// answer lost again) is not a second release.
func TestCheckerWantsLostReleaseReported(t *testing.T) {
	for _, tc := range []struct {
		name        string
		report      bool // a release event follows
		count       int  // its count (the store holds 2)
		quarantined bool // a quarantined event follows it
		want        string
	}{
		{name: "unreported", want: "f0000 quarantined when"},
		{name: "reported", report: true, count: 2, quarantined: true},
		{name: "no-quarantine-event", report: true, count: 2, want: "without being quarantined"},
		{name: "wrong-count", report: true, count: 3, quarantined: true, want: "its late report says 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := busyWorld(t, "lost-release")
			in := w.Instances[0]
			comp := "worker:discovery:0"
			wid := in.node.Sup.WorkerID(comp)
			// The store's side: a first crash counted, the file claimed
			// again and its second crash quarantining it.
			crash := &store.Crash{QuarantineAt: w.cfg.QuarantineAfter, Reason: quarantineReason(w)}
			if _, err := w.Store.ReleaseWorker(w.ctx, wid, store.Death{}, crash); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Store.Claim(w.ctx, store.Claim{FileKey: "f0000", WorkerID: wid, ClaimedAt: w.now, LeaseUntil: w.now.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Store.ReleaseWorker(w.ctx, wid, store.Death{}, crash); err != nil {
				t.Fatal(err)
			}
			w.check.crash.count["f0000"] = 1
			w.record(event.Event{Event: event.Exit, Instance: in.ID, Component: comp, Code: event.IntPtr(-1), Reason: "SIGKILL"})
			for range 2 {
				w.record(event.Event{Event: event.Fault, File: "f0000", Worker: wid, Reason: LostReply, Detail: opReleaseWorker})
			}
			if tc.report {
				w.record(event.Event{Event: event.Release, Instance: in.ID, Component: comp, File: "f0000", Worker: wid, Reason: "worker died", Count: tc.count})
			}
			if tc.quarantined {
				w.record(event.Event{Event: event.Quarantined, Instance: in.ID, File: "f0000", Reason: quarantineReason(w), Count: tc.count})
			}
			w.check.afterEvent()
			wantViolation(t, w, tc.want)
		})
	}
}

// Two lost releases of one file by different workers: the first owner's
// release freed f0000 without an answer, the second host's worker claimed
// it and died, its release lost too. Each owner's late report is checked
// against its own lost release (the model once kept one per file, so the
// first owner's correct report was taken for a new release, and a missing
// one went unnoticed).
func TestCheckerLostReleasesOfOneFileByTwoHosts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reportA bool
		want    string
	}{
		{name: "both-reported", reportA: true},
		{name: "first-unreported", want: "f0000 released when a:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkedWorld(t, oneFileTwoHosts)
			w.Run()
			holder, other := holderAndOther(t, w)
			comp := "worker:discovery:0"
			a, b := holder.node.Sup.WorkerID(comp), other.node.Sup.WorkerID(comp)
			crash := &store.Crash{QuarantineAt: w.cfg.QuarantineAfter, Reason: quarantineReason(w)}
			if _, err := w.Store.ReleaseWorker(w.ctx, a, store.Death{}, crash); err != nil {
				t.Fatal(err)
			}
			w.record(event.Event{Event: event.Exit, Instance: holder.ID, Component: comp, Code: event.IntPtr(-1), Reason: "SIGKILL"})
			w.record(event.Event{Event: event.Fault, File: "f0000", Worker: a, Reason: LostReply, Detail: opReleaseWorker})
			if _, err := w.Store.Claim(w.ctx, store.Claim{FileKey: "f0000", WorkerID: b, ClaimedAt: w.now, LeaseUntil: w.now.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Store.ReleaseWorker(w.ctx, b, store.Death{}, crash); err != nil {
				t.Fatal(err)
			}
			w.record(event.Event{Event: event.Exit, Instance: other.ID, Component: comp, Code: event.IntPtr(-1), Reason: "SIGKILL"})
			w.record(event.Event{Event: event.Fault, File: "f0000", Worker: b, Reason: LostReply, Detail: opReleaseWorker})
			if tc.reportA {
				w.record(event.Event{Event: event.Release, Instance: holder.ID, Component: comp, File: "f0000", Worker: a, Reason: "worker died", Count: 1})
			}
			w.record(event.Event{Event: event.Release, Instance: other.ID, Component: comp, File: "f0000", Worker: b, Reason: "worker died", Count: 2})
			w.record(event.Event{Event: event.Quarantined, Instance: other.ID, File: "f0000", Reason: quarantineReason(w), Count: 2})
			w.check.afterEvent()
			wantViolation(t, w, tc.want)
		})
	}
}
