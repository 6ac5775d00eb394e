package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
)

// checkedWorld parses a scenario and prepares a world with the safety
// checker on; tests then run it and feed events or faults by hand.
func checkedWorld(t *testing.T, y string) *World {
	t.Helper()
	sc, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(sc, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// busyWorld is a checked world of one worker run 5 s into a 10-minute job
// on its one file, f0000: a start for checker tests that then record
// events by hand.
func busyWorld(t *testing.T, name string) *World {
	t.Helper()
	w := checkedWorld(t, "name: "+name+"\nseed: 1\nduration: 5s\nconfig: {workers: 1}\nlibrary: {files: 1, job_time: 10m}\n")
	w.Run()
	return w
}

func hasViolation(vs []string, substr string) bool {
	return slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, substr) })
}

// wantViolation fails t unless w's checker flagged a violation containing
// want, or, with want "", flagged none.
func wantViolation(t *testing.T, w *World, want string) {
	t.Helper()
	if want == "" && len(w.check.violations) > 0 {
		t.Errorf("flagged: %v", w.check.violations)
	}
	if want != "" && !hasViolation(w.check.violations, want) {
		t.Errorf("want a violation %q, got %v", want, w.check.violations)
	}
}

// oneFileTwoHosts: two main processes with one worker each and one
// ten-minute file, which one of them claims in the first 5 s.
const oneFileTwoHosts = `name: one-file-two-hosts
seed: 1
duration: 5s
instances: [a, b]
config: {workers: 1}
library: {files: 1, job_time: 10m}
`

// holderAndOther returns the main process whose worker holds f0000 and the
// other one.
func holderAndOther(t *testing.T, w *World) (holder, other *Instance) {
	t.Helper()
	for _, in := range w.Instances {
		if _, ok := in.procs["worker:discovery:0"].wk.Holding(); ok {
			holder = in
		} else {
			other = in
		}
	}
	if holder == nil || other == nil {
		t.Fatal("setup: want exactly one of the two workers on f0000")
	}
	return holder, other
}

// A worker whose lease expired (cleanup elsewhere deleted its claim) is still
// on its job while its process lives: another worker claiming the file then
// means two workers analyse it at once. Once the first worker's process has
// exited, the same claim is legitimate. The events are fed to the checker
// directly, so the test does not depend on the core producing them.
func TestCheckerFlagsClaimWhileExpiredHolderStillRuns(t *testing.T) {
	y := oneFileTwoHosts
	for _, holderExits := range []bool{false, true} {
		t.Run(fmt.Sprintf("holder_exits=%v", holderExits), func(t *testing.T) {
			w := checkedWorld(t, y)
			w.Run()
			holder, other := holderAndOther(t, w)
			hp := holder.procs["worker:discovery:0"]
			if hp.busy != running || hp.job.FileKey != "f0000" {
				t.Fatal("setup: holder not running f0000")
			}
			hid := holder.node.Sup.WorkerID("worker:discovery:0")
			oid := other.node.Sup.WorkerID("worker:discovery:0")
			w.record(event.Event{Event: event.LeaseExpired, Instance: other.ID, File: "f0000", Worker: hid})
			if holderExits {
				hp.killed("SIGKILL", "SIGKILL")
			}
			w.record(event.Event{Event: event.Claim, Component: "worker:discovery:0", File: "f0000", Worker: oid})
			flagged := hasViolation(w.check.violations, "two workers analyse f0000 at once")
			if flagged == holderExits {
				t.Errorf("flagged=%v with the holder's process exited=%v: %v", flagged, holderExits, w.check.violations)
			}
		})
	}
}

// The bound on releasing a dead worker's claims (lease_ttl + cleanup period
// + one check interval) is measured from the latest of the death, a main
// process being up and the store's last recovery: a store failure after the
// death postpones the check, it does not cancel it.
func TestCheckerDeadClaimBoundSurvivesStoreBlip(t *testing.T) {
	for _, blip := range []bool{false, true} {
		t.Run(fmt.Sprintf("blip=%v", blip), func(t *testing.T) {
			w := busyWorld(t, "dead-claim")
			p := w.Instances[0].procs["worker:discovery:0"]
			if p == nil || p.busy != running {
				t.Fatal("setup: worker not running its job")
			}
			// The owner's release (queued) never runs: the claim stays, as if
			// the core forgot to release it.
			p.killed("SIGKILL", "SIGKILL")
			w.check.afterEvent()
			limit := w.cfg.LeaseTTL + w.cfg.CleanupPeriod + w.cfg.CheckInterval
			if blip {
				w.now = w.now.Add(time.Second)
				w.Store.SetFault(memstore.Down)
				w.check.afterEvent()
				w.Store.SetFault(memstore.Healthy)
				w.now = w.now.Add(time.Second)
				w.check.afterEvent()
				// Within the bound counted from the recovery: nothing yet.
				w.now = w.now.Add(limit - time.Second)
				w.check.afterEvent()
				if len(w.check.violations) != 0 {
					t.Fatalf("flagged within the bound after the store's recovery: %v", w.check.violations)
				}
			}
			w.now = w.now.Add(10 * time.Minute)
			w.check.afterEvent()
			if len(w.Store.Claims()) != 1 {
				t.Fatal("setup: claim not held")
			}
			if !hasViolation(w.check.violations, "claim on f0000 of dead a:1/worker:discovery:0 not released") {
				t.Errorf("dead worker's claim held 10 min, store healthy since: %v", w.check.violations)
			}
		})
	}
}

// An orphan (main process dead) never exits mid-job because of the main
// death; it may abandon a job whose progress stood still for stall_after.
// Exiting with a progressing job, or with a stalled one too early, is a
// violation; abandoning a stalled job after stall_after is not.
func TestCheckerOrphanMidJobExit(t *testing.T) {
	cases := []struct {
		name  string
		stall bool
		after time.Duration // from the main death to the exit
		want  string        // violation substring, "" for none
	}{
		{"progressing", false, 10 * time.Minute, "exited mid-job"},
		{"stalled-too-early", true, time.Minute, "abandoned its job f0000 after 1m0s"},
		{"stalled", true, 10 * time.Minute, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stall := ""
			if tc.stall {
				stall = "\n  overrides: {f0000: {stall: true}}"
			}
			w := checkedWorld(t, `name: orphan-exit
seed: 1
duration: 30s
config: {workers: 1}
library:
  files: 1
  job_time: 10m`+stall+"\n")
			w.Run()
			in := w.Instances[0]
			p := in.procs["worker:discovery:0"]
			if p == nil || p.busy != running || w.specs[p.job.FileKey].Stall != tc.stall {
				t.Fatal("setup: worker not running the job")
			}
			in.mainDeath("main process died")
			w.check.afterEvent()
			w.now = w.now.Add(tc.after)
			p.exit(1, "job f0000 made no progress: abandoned")
			w.check.afterEvent()
			if tc.want == "" && len(w.check.violations) != 0 {
				t.Errorf("violations: %v", w.check.violations)
			}
			if tc.want != "" && !hasViolation(w.check.violations, tc.want) {
				t.Errorf("want a violation %q, got %v", tc.want, w.check.violations)
			}
		})
	}
}

// The checker counts restarts itself: restart_count as the core reports it
// is not trusted, and a backoff_reset is accepted only after healthy_reset
// of continuous healthy status (from the monitor's status events). 25
// restarts 6 min apart with the core claiming restart_count 1 and resetting
// the backoff 1 s after each restart break both rules.
func TestCheckerCountsRestartsItself(t *testing.T) {
	w := checkedWorld(t, `name: lifetime
seed: 1
duration: 1s
config: {workers: 1}
library: {files: 0}
`)
	const comp = "worker:discovery:0"
	for i := 0; i < 25; i++ {
		w.now = w.start.Add(time.Duration(i) * 6 * time.Minute)
		w.record(event.Event{Event: event.Exit, Instance: "a:1", Component: comp, Code: event.IntPtr(1)})
		w.record(event.Event{Event: event.RestartScheduled, Instance: "a:1", Component: comp, BackoffMs: 1000, RestartCount: 1})
		w.now = w.now.Add(time.Second)
		w.record(event.Event{Event: event.Restart, Instance: "a:1", Component: comp, RestartCount: 1})
		w.now = w.now.Add(time.Second)
		w.record(event.Event{Event: event.BackoffReset, Instance: "a:1", Component: comp, RestartCount: 1})
	}
	v := w.check.violations
	if !hasViolation(v, "21 restarts without a reset") {
		t.Errorf("21st restart within the lifetime not flagged: %v", v)
	}
	if !hasViolation(v, "backoff reset after 0s of continuous health") {
		t.Errorf("backoff reset without health not flagged: %v", v)
	}
}

// What the restart rules allow is accepted: a backoff reset after
// healthy_reset of health as the monitor reports it, and a lifetime count
// cleared by lifetime_reset of continuous health or by a manual reset.
func TestCheckerAcceptsEarnedResets(t *testing.T) {
	w := checkedWorld(t, `name: lifetime-ok
seed: 1
duration: 1s
config: {workers: 1, lifetime_limit: 3}
library: {files: 0}
`)
	const comp = "worker:discovery:0"
	at := time.Duration(0)
	step := func(d time.Duration) { at += d; w.now = w.start.Add(at) }
	crashAndRestart := func(backoff int64) {
		w.record(event.Event{Event: event.Exit, Instance: "a:1", Component: comp, Code: event.IntPtr(1)})
		w.record(event.Event{Event: event.RestartScheduled, Instance: "a:1", Component: comp, BackoffMs: backoff})
		w.record(event.Event{Event: event.Status, Instance: "a:1", Component: comp, From: "healthy", To: "unhealthy"})
		step(time.Duration(backoff) * time.Millisecond)
		w.record(event.Event{Event: event.Restart, Instance: "a:1", Component: comp})
		w.record(event.Event{Event: event.Spawn, Instance: "a:1", Component: comp})
		step(time.Second)
		w.record(event.Event{Event: event.Status, Instance: "a:1", Component: comp, From: "unhealthy", To: "healthy"})
	}
	w.record(event.Event{Event: event.Spawn, Instance: "a:1", Component: comp})
	w.record(event.Event{Event: event.Status, Instance: "a:1", Component: comp, To: "healthy"})
	step(time.Hour)
	crashAndRestart(1000)
	crashAndRestart(2000)
	step(w.cfg.HealthyReset)
	w.record(event.Event{Event: event.BackoffReset, Instance: "a:1", Component: comp, RestartCount: 2})
	step(10 * time.Minute)
	crashAndRestart(1000)
	step(w.cfg.LifetimeReset)
	w.record(event.Event{Event: event.BackoffReset, Instance: "a:1", Component: comp})
	step(time.Hour)
	crashAndRestart(1000) // 4th restart, but the lifetime count was cleared
	crashAndRestart(2000)
	w.record(event.Event{Event: event.Reset, Instance: "a:1", Component: comp})
	step(10 * time.Minute)
	crashAndRestart(1000)
	crashAndRestart(2000)
	if len(w.check.violations) != 0 {
		t.Errorf("violations: %v", w.check.violations)
	}
	crashAndRestart(4000)
	crashAndRestart(8000) // 4th since the reset: over lifetime_limit 3
	if !hasViolation(w.check.violations, "4 restarts without a reset") {
		t.Errorf("4th restart after a reset with lifetime_limit 3 not flagged: %v", w.check.violations)
	}
}

// The end-of-run check reports files in key order, whatever the store's map
// order.
func TestCheckerFinalReportsInFileOrder(t *testing.T) {
	w := checkedWorld(t, `name: final-order
seed: 1
duration: 1s
config: {workers: 1}
library: {files: 0}
`)
	keys := []string{"f0007", "f0002", "f0005", "f0001", "f0009", "f0003"}
	for _, k := range keys {
		w.Store.TagWrites[k] = 2
	}
	w.check.final()
	got := w.check.violations
	want := slices.Sorted(slices.Values(keys))
	if len(got) != len(want) {
		t.Fatalf("violations: %v", got)
	}
	for i, k := range want {
		if !strings.Contains(got[i], "file "+k+" completed 2 times") {
			t.Fatalf("violation %d = %q, want file %s: %v", i, got[i], k, got)
		}
	}
}

// A dead worker's claims are awaited from the start of the main process up
// the longest: one that started later runs its first cleanup a period after
// its start, whatever main processes came and went before it.
func TestCheckerDeadClaimBoundFromTheMainUpLongest(t *testing.T) {
	w := checkedWorld(t, `name: dead-claim-restarts
seed: 1
duration: 5s
config: {workers: 1}
instances: [a, b]
library: {files: 1, job_time: 10m}
`)
	w.Run()
	var holder, other *Instance
	for _, in := range w.Instances {
		if p := in.procs["worker:discovery:0"]; p != nil && p.busy == running {
			holder = in
		} else {
			other = in
		}
	}
	if holder == nil || other == nil {
		t.Fatal("setup: want one instance's worker on the file, the other's idle")
	}
	// The holder's worker dies, and its claim stays (as if nobody released it).
	holder.procs["worker:discovery:0"].killed("SIGKILL", "SIGKILL")
	w.check.afterEvent()
	died := w.now
	step := func(d time.Duration, set func()) {
		w.now = died.Add(d)
		if set != nil {
			set()
		}
		w.check.afterEvent()
	}
	// The other main process restarts at +10 s (down, then up at +15 s), and
	// the holder's main process, up since the start, dies at +20 s.
	step(10*time.Second, func() { other.alive = false })
	step(15*time.Second, func() { other.alive = true })
	step(20*time.Second, func() { holder.alive = false })
	limit := w.cfg.LeaseTTL + w.cfg.CleanupPeriod + w.cfg.CheckInterval
	step(limit+5*time.Second, nil)
	if len(w.check.violations) != 0 {
		t.Fatalf("flagged within the bound counted from the restart of the main process up now: %v", w.check.violations)
	}
	step(15*time.Second+limit+time.Second, nil)
	if !hasViolation(w.check.violations, "not released") {
		t.Errorf("claim held past the bound counted from the restart: %v", w.check.violations)
	}
}

// A run with safety violations fails, expect block or not (so `nomarr sim`
// exits 1 on it), unless the block says how many it expects.
func TestViolationsFailARunWithoutExpect(t *testing.T) {
	for _, expect := range []string{"", "expect: {all_tagged: true}\n", "expect: {violations: 1}\n"} {
		w := checkedWorld(t, "name: v\nseed: 1\nduration: 1m\nconfig: {workers: 1}\nlibrary: {files: 1, job_time: 1s}\n"+expect)
		if res := w.Run(); len(res.Violations) != 0 || (len(res.Failures) != 0) != strings.Contains(expect, "violations") {
			t.Fatalf("setup (%q): violations %v, failures %v", expect, res.Violations, res.Failures)
		}
		w.check.violate("a test violation")
		res := w.result()
		if want := expect != "expect: {violations: 1}\n"; (len(res.Failures) > 0) != want {
			t.Errorf("expect %q: failures %v, want failing %v", expect, res.Failures, want)
		}
	}
}

// A healthy run counts from the monitor's check before the one that saw it
// (the owner may have seen it begin at any tick since), however late that
// check came: a backoff reset a healthy_reset after that is accepted, and
// one a second sooner is flagged.
func TestCheckerCountsHealthFromThePreviousCheck(t *testing.T) {
	for _, early := range []bool{false, true} {
		w := checkedWorld(t, `name: health-from-check
seed: 1
duration: 5s
config: {workers: 1}
library: {files: 0}
`)
		w.Run()
		const comp = "worker:discovery:0"
		w.record(event.Event{Event: event.Status, Instance: "a:1", Component: comp, From: "healthy", To: "unhealthy"})
		prev := w.Instances[0].node.Mon.CheckDue().Add(-w.cfg.CheckInterval)
		// The next check comes 10 s late (a loop held up in a store call).
		w.now = w.now.Add(10 * time.Second)
		w.record(event.Event{Event: event.Status, Instance: "a:1", Component: comp, From: "unhealthy", To: "healthy"})
		reset := prev.Add(w.cfg.HealthyReset)
		if early {
			reset = reset.Add(-time.Second)
		}
		w.now = reset
		w.record(event.Event{Event: event.BackoffReset, Instance: "a:1", Component: comp})
		if flagged := hasViolation(w.check.violations, "backoff reset after"); flagged != early {
			t.Errorf("reset %s after the previous check: flagged %v, want %v: %v", reset.Sub(prev), flagged, early, w.check.violations)
		}
	}
}
