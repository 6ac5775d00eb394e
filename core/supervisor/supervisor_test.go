package supervisor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const (
	w0 = "worker:discovery:0"
	w1 = "worker:discovery:1"
)

// call is one recorded call on the fake Processes port.
type call struct {
	op   string // "spawn" or "signal"
	comp string
	gen  uint64
	sig  supervisor.Signal
}

// fakeProcs records Spawn and Signal calls. Spawn fails while failSpawn[comp]
// is set. The hooks let a test observe the supervisor's state at the moment
// of a call (read-only).
type fakeProcs struct {
	calls     []call
	pid       int
	failSpawn map[string]error
	onSpawn   func(comp string, gen uint64)
	onSignal  func(comp string, gen uint64, sig supervisor.Signal)
}

func (p *fakeProcs) Spawn(comp string, gen uint64) (int, error) {
	p.calls = append(p.calls, call{op: "spawn", comp: comp, gen: gen})
	if p.onSpawn != nil {
		p.onSpawn(comp, gen)
	}
	if err := p.failSpawn[comp]; err != nil {
		return 0, err
	}
	p.pid++
	return 1000 + p.pid, nil
}

func (p *fakeProcs) Signal(comp string, gen uint64, sig supervisor.Signal) {
	p.calls = append(p.calls, call{op: "signal", comp: comp, gen: gen, sig: sig})
	if p.onSignal != nil {
		p.onSignal(comp, gen, sig)
	}
}

func (p *fakeProcs) count(op, comp string) int {
	n := 0
	for _, c := range p.calls {
		if c.op == op && c.comp == comp {
			n++
		}
	}
	return n
}

func (p *fakeProcs) signals(comp string, sig supervisor.Signal) int {
	n := 0
	for _, c := range p.calls {
		if c.op == "signal" && c.comp == comp && c.sig == sig {
			n++
		}
	}
	return n
}

type recorder struct{ events []event.Event }

func (r *recorder) Emit(e event.Event) { r.events = append(r.events, e) }

func (r *recorder) of(kind, comp string) []event.Event {
	var out []event.Event
	for _, e := range r.events {
		if e.Event == kind && (comp == "" || e.Component == comp) {
			out = append(out, e)
		}
	}
	return out
}

type rig struct {
	t     *testing.T
	ctx   context.Context
	cfg   supervisor.Config
	sup   *supervisor.Supervisor
	procs *fakeProcs
	st    *memstore.Store
	ev    *recorder
}

func newRig(t *testing.T, workers int, mod func(*supervisor.Config)) *rig {
	t.Helper()
	return newRigOn(t, memstore.New(1), workers, mod)
}

func newRigOn(t *testing.T, st *memstore.Store, workers int, mod func(*supervisor.Config)) *rig {
	t.Helper()
	return newRigThrough(t, st, st, workers, mod)
}

// newRigThrough is newRigOn whose supervisor writes through through (a
// wrapper of st that fails or loses some calls); r.st is st itself.
func newRigThrough(t *testing.T, st *memstore.Store, through store.Store, workers int, mod func(*supervisor.Config)) *rig {
	t.Helper()
	cfg := supervisor.DefaultConfig("inst-a", "node-a", workers)
	if mod != nil {
		mod(&cfg)
	}
	r := &rig{t: t, ctx: context.Background(), cfg: cfg, procs: &fakeProcs{}, st: st, ev: &recorder{}}
	sup, err := supervisor.New(cfg, r.procs, through, r.ev)
	if err != nil {
		t.Fatalf("supervisor.New: %v", err)
	}
	r.sup = sup
	return r
}

func (r *rig) info(id string) supervisor.Info {
	r.t.Helper()
	in, ok := r.sup.Info(id)
	if !ok {
		r.t.Fatalf("no component %s", id)
	}
	return in
}

func (r *rig) gen(id string) uint64 { return r.info(id).Gen }

// frame feeds one valid frame on the current generation's pipe.
func (r *rig) frame(id string, now time.Time, phase health.Phase, job string, progress int64) {
	f := frame.Frame{ComponentID: id, Status: "ok", Phase: phase, CurrentJob: job, Progress: progress}
	r.sup.PipeData(id, r.gen(id), frame.Append(nil, &f), now)
}

func (r *rig) status(id string, now time.Time) health.Status { return r.sup.Status(id, now) }

func (r *rig) wantStatus(id string, now time.Time, want health.Status) {
	r.t.Helper()
	if got := r.status(id, now); got != want {
		r.t.Fatalf("Status(%s) at %s = %s, want %s", id, now.Sub(t0), got, want)
	}
}

// exit reports the exit of the current generation.
func (r *rig) exit(id string, code int, now time.Time) {
	r.sup.Exited(r.ctx, id, r.gen(id), code, now)
}

func (r *rig) addFiles(keys ...string) {
	r.t.Helper()
	var files []store.File
	for _, k := range keys {
		files = append(files, store.File{Key: k, Path: "/music/" + k + ".flac", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true})
	}
	if _, err := r.st.UpsertFiles(r.ctx, files); err != nil {
		r.t.Fatalf("UpsertFiles: %v", err)
	}
}

func (r *rig) claim(file, worker string, now time.Time) {
	r.t.Helper()
	if _, err := r.st.Claim(r.ctx, store.Claim{FileKey: file, WorkerID: worker, ClaimedAt: now, LeaseUntil: now.Add(30 * time.Second)}); err != nil {
		r.t.Fatalf("Claim(%s, %s): %v", file, worker, err)
	}
}

func TestStatusTable(t *testing.T) {
	cases := []struct {
		name string
		// setup drives the supervisor (started at t0) and returns the query time.
		setup func(r *rig) time.Time
		want  health.Status
	}{
		{"before start", func(r *rig) time.Time { return t0 }, health.Pending},
		{"spawned, no frame, within startup_timeout", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			return at(60*time.Second - time.Millisecond)
		}, health.Pending},
		{"spawned, no frame, startup_timeout reached", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			return at(60 * time.Second)
		}, health.Unhealthy},
		{"phase initializing", phaseAt(health.Initializing), health.Pending},
		{"phase loading_models", phaseAt(health.LoadingModels), health.Pending},
		{"phase idle", phaseAt(health.Idle), health.Healthy},
		{"phase processing", phaseAt(health.Processing), health.Healthy},
		{"phase paused", phaseAt(health.Paused), health.Healthy},
		{"phase stopping", phaseAt(health.Stopping), health.Healthy},
		{"phase backing_off", phaseAt(health.BackingOff), health.Unhealthy},
		{"frame exactly stale_after old", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			return at(11 * time.Second)
		}, health.Healthy},
		{"frame older than stale_after", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			return at(11*time.Second + time.Millisecond)
		}, health.Unhealthy},
		{"stale loading_models frame", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			r.frame(w0, at(time.Second), health.LoadingModels, "", 0)
			return at(12 * time.Second)
		}, health.Unhealthy},
		{"dead, restart pending", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			r.exit(w0, 1, at(2*time.Second))
			if r.sup.PendingTimers(w0) != 1 {
				r.t.Fatalf("no restart pending")
			}
			return at(2*time.Second + 500*time.Millisecond)
		}, health.Unhealthy},
		{"being killed", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			r.sup.PipeClosed(w0, r.gen(w0), at(2*time.Second))
			return at(2 * time.Second)
		}, health.Unhealthy},
		{"killed for a stall with fresh frames, exit not yet seen", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			d := time.Second
			for ; r.procs.signals(w0, supervisor.Kill) == 0; d += 5 * time.Second {
				r.frame(w0, at(d), health.Processing, "f1", 7)
				r.sup.Tick(r.ctx, at(d))
			}
			return at(d - 5*time.Second)
		}, health.Unhealthy},
		{"failed", func(r *rig) time.Time {
			r.sup.Start(r.ctx, t0)
			r.exit(w0, 1, at(time.Second))
			r.sup.Tick(r.ctx, at(2*time.Second)) // restart
			r.exit(w0, 1, at(3*time.Second))     // window limit 1: gives up
			return at(3 * time.Second)
		}, health.Failed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 1, func(c *supervisor.Config) { c.Restart.WindowLimit = 1 })
			now := tc.setup(r)
			r.wantStatus(w0, now, tc.want)
		})
	}
}

func phaseAt(p health.Phase) func(r *rig) time.Time {
	return func(r *rig) time.Time {
		r.sup.Start(r.ctx, t0)
		r.frame(w0, at(time.Second), p, "", 0)
		return at(5 * time.Second)
	}
}

func TestHangKillsAtHangAfter(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	for d := time.Second; d < 31*time.Second; d += time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	r.sup.Tick(r.ctx, at(31*time.Second-time.Millisecond))
	if n := r.procs.signals(w0, supervisor.Kill); n != 0 {
		t.Fatalf("killed before hang_after (%d kills)", n)
	}
	r.wantStatus(w0, at(31*time.Second-time.Millisecond), health.Unhealthy) // stale, not yet dead
	r.sup.Tick(r.ctx, at(31*time.Second))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills at hang_after = %d, want 1", n)
	}
	last := r.procs.calls[len(r.procs.calls)-1]
	if last.gen != 1 {
		t.Fatalf("kill sent to gen %d, want 1", last.gen)
	}
	// Further ticks do not kill again while the kill is in flight.
	r.sup.Tick(r.ctx, at(32*time.Second))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills after in-flight kill = %d, want 1", n)
	}
	r.exit(w0, -1, at(32*time.Second))
	ex := r.ev.of(event.Exit, w0)
	if len(ex) != 1 || !strings.Contains(ex[0].Reason, "hang") {
		t.Fatalf("exit events = %+v, want one with a hang reason", ex)
	}
	if r.sup.PendingTimers(w0) != 1 {
		t.Fatalf("no restart scheduled after the hang")
	}
}

func TestStartupTimeout(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	for d := time.Duration(0); d < 60*time.Second; d += time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	r.sup.Tick(r.ctx, at(60*time.Second-time.Millisecond))
	if n := r.procs.signals(w0, supervisor.Kill); n != 0 {
		t.Fatalf("killed before startup_timeout")
	}
	r.sup.Tick(r.ctx, at(60*time.Second))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills at startup_timeout = %d, want 1", n)
	}
	if k := r.ev.of(event.Kill, w0); len(k) != 1 || !strings.Contains(k[0].Reason, "startup_timeout") {
		t.Fatalf("kill events = %+v", k)
	}
}

func TestColdStartMax(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Initializing, "", 0)
	limit := 15 * time.Minute // pending since spawn (t0)
	for d := 2 * time.Second; d < limit; d += time.Second {
		if d%(5*time.Second) == 0 {
			r.frame(w0, at(d), health.LoadingModels, "", 0)
		}
		r.sup.Tick(r.ctx, at(d))
		if r.procs.signals(w0, supervisor.Kill) != 0 {
			t.Fatalf("killed during a cold start at %s, before cold_start_max", d)
		}
	}
	r.wantStatus(w0, at(limit-time.Second), health.Pending)
	r.sup.Tick(r.ctx, at(limit))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills at cold_start_max = %d, want 1", n)
	}
	if k := r.ev.of(event.Kill, w0); len(k) != 1 || !strings.Contains(k[0].Reason, "cold_start_max") {
		t.Fatalf("kill events = %+v", k)
	}
}

func TestStallKillsJobWithoutProgress(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	start := time.Second // first frame of the job
	for d := start; d < start+10*time.Minute; d += time.Second {
		if (d-start)%(5*time.Second) == 0 {
			r.frame(w0, at(d), health.Processing, "f1", 7)
		}
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.signals(w0, supervisor.Kill); n != 0 {
		t.Fatalf("killed before stall_after")
	}
	r.wantStatus(w0, at(start+10*time.Minute-time.Second), health.Healthy)
	r.sup.Tick(r.ctx, at(start+10*time.Minute))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills at stall_after = %d, want 1", n)
	}
	if k := r.ev.of(event.Kill, w0); len(k) != 1 || !strings.Contains(k[0].Reason, "stall") {
		t.Fatalf("kill events = %+v", k)
	}
}

func TestNoKillWithFreshFramesAndProgress(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	// A 14-minute cold start with fresh frames, then one hour-long job whose
	// progress advances slowly (every 5 minutes) but always within stall_after.
	var progress int64
	for d := time.Second; d < 75*time.Minute; d += time.Second {
		if d%(5*time.Second) == 0 || d == time.Second {
			switch {
			case d < 14*time.Minute:
				r.frame(w0, at(d), health.LoadingModels, "", 0)
			default:
				if d%(5*time.Minute) == 0 {
					progress++
				}
				r.frame(w0, at(d), health.Processing, "long-job", progress)
			}
		}
		r.sup.Tick(r.ctx, at(d))
		if len(r.ev.of(event.Kill, w0)) != 0 {
			t.Fatalf("killed at %s: %+v", d, r.ev.of(event.Kill, w0))
		}
	}
	if r.procs.signals(w0, supervisor.Kill) != 0 || r.procs.count("spawn", w0) != 1 {
		t.Fatalf("calls = %+v", r.procs.calls)
	}
	r.wantStatus(w0, at(75*time.Minute), health.Healthy)
}

func TestExitSchedulesRestartWithBackoff(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	died := 2 * time.Second
	r.exit(w0, 3, at(died))

	rs := r.ev.of(event.RestartScheduled, w0)
	if len(rs) != 1 || rs[0].BackoffMs != 1000 || rs[0].RestartCount != 1 {
		t.Fatalf("restart_scheduled = %+v, want backoff 1000 ms, count 1", rs)
	}
	if in := r.info(w0); !in.RestartPending || !in.RestartAt.Equal(at(died+time.Second)) || in.Running {
		t.Fatalf("info after death = %+v", in)
	}
	if d, ok := r.sup.Deadline(); !ok || !d.Equal(at(died+time.Second)) {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
	r.sup.Tick(r.ctx, at(died+time.Second-time.Millisecond))
	if n := r.procs.count("spawn", w0); n != 1 {
		t.Fatalf("respawned before the backoff (%d spawns)", n)
	}
	r.sup.Tick(r.ctx, at(died+time.Second))
	if n := r.procs.count("spawn", w0); n != 2 {
		t.Fatalf("spawns after backoff = %d, want 2", n)
	}
	if g := r.gen(w0); g != 2 {
		t.Fatalf("gen = %d, want 2", g)
	}
	r.wantStatus(w0, at(died+time.Second), health.Pending)

	died2 := died + 3*time.Second
	r.exit(w0, 3, at(died2))
	rs = r.ev.of(event.RestartScheduled, w0)
	if len(rs) != 2 || rs[1].BackoffMs != 2000 || rs[1].RestartCount != 2 {
		t.Fatalf("second restart_scheduled = %+v, want backoff 2000 ms, count 2", rs)
	}
	if in := r.info(w0); !in.RestartAt.Equal(at(died2 + 2*time.Second)) {
		t.Fatalf("RestartAt = %s, want %s", in.RestartAt.Sub(t0), died2+2*time.Second)
	}
	if st, ok := r.st.RestartState("node-a/" + w0); !ok || st.RestartCount != 2 || st.Consecutive != 2 {
		t.Fatalf("persisted restart state = %+v %v", st, ok)
	}
}

func TestSecondDeathReplacesTimer(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.exit(w0, 1, at(time.Second)) // timer at 2 s
	if r.sup.PendingTimers(w0) != 1 {
		t.Fatalf("PendingTimers = %d, want 1", r.sup.PendingTimers(w0))
	}
	// The restart's spawn fails: a second death while the first timer fires.
	r.procs.failSpawn = map[string]error{w0: errors.New("fork: out of memory")}
	r.sup.Tick(r.ctx, at(2*time.Second))
	if r.sup.PendingTimers(w0) != 1 {
		t.Fatalf("PendingTimers after second death = %d, want 1", r.sup.PendingTimers(w0))
	}
	if in := r.info(w0); !in.RestartAt.Equal(at(4 * time.Second)) {
		t.Fatalf("RestartAt = %s, want 4s (replaced timer, backoff 2 s)", in.RestartAt.Sub(t0))
	}
	r.procs.failSpawn = nil
	// A manual reset while a timer is pending spawns now; the old timer is gone.
	if err := r.sup.Reset(r.ctx, w0, at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if r.sup.PendingTimers(w0) != 0 {
		t.Fatalf("PendingTimers after reset = %d, want 0", r.sup.PendingTimers(w0))
	}
	spawns := r.procs.count("spawn", w0)
	for d := 3 * time.Second; d <= 10*time.Second; d += 500 * time.Millisecond {
		r.sup.Tick(r.ctx, at(d))
		if r.sup.PendingTimers(w0) > 1 {
			t.Fatal("more than one pending timer")
		}
	}
	if n := r.procs.count("spawn", w0); n != spawns {
		t.Fatalf("stale timer fired: %d spawns, want %d", n, spawns)
	}
}

func TestStopCancelsTimersBeforeSignals(t *testing.T) {
	r := newRig(t, 2, nil)
	r.addFiles("f1")
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	r.frame(w1, at(time.Second), health.Processing, "f1", 1)
	r.claim("f1", r.sup.WorkerID(w1), at(time.Second))
	r.exit(w0, 1, at(2*time.Second)) // w0: restart pending at 3 s
	if r.sup.PendingTimers(w0) != 1 {
		t.Fatal("no pending timer before Stop")
	}
	r.procs.onSignal = func(comp string, gen uint64, sig supervisor.Signal) {
		for _, id := range r.sup.Components() {
			if r.sup.PendingTimers(id) != 0 {
				t.Errorf("signal %s to %s sent while %s still has a pending timer", sig, comp, id)
			}
		}
	}
	before := len(r.procs.calls)
	r.sup.Stop(at(2500 * time.Millisecond))
	after := r.procs.calls[before:]
	if len(after) != 1 || after[0] != (call{op: "signal", comp: w1, gen: 1, sig: supervisor.Term}) {
		t.Fatalf("calls on Stop = %+v, want one SIGTERM to %s", after, w1)
	}
	if !r.sup.Stopping() || r.sup.Done() {
		t.Fatalf("Stopping=%v Done=%v", r.sup.Stopping(), r.sup.Done())
	}
	// Past w0's old restart time and within the grace: nothing happens.
	for d := 2500 * time.Millisecond; d < 12500*time.Millisecond; d += 500 * time.Millisecond {
		r.sup.Tick(r.ctx, at(d))
	}
	if len(r.procs.calls) != before+1 {
		t.Fatalf("calls during grace = %+v", r.procs.calls[before:])
	}
	r.sup.Tick(r.ctx, at(12500*time.Millisecond)) // stop_grace (10 s) elapsed
	if n := r.procs.signals(w1, supervisor.Kill); n != 1 {
		t.Fatalf("kills after stop_grace = %d, want 1", n)
	}
	r.exit(w1, -1, at(13*time.Second))
	if len(r.ev.of(event.RestartScheduled, w1)) != 0 || r.sup.PendingTimers(w1) != 0 {
		t.Fatal("restart scheduled for a death while stopping")
	}
	if _, ok := r.st.ClaimOf("f1"); ok {
		t.Fatal("claim of the stopped worker not released")
	}
	if f, _ := r.st.Peek("f1"); f.CrashCount != 0 {
		t.Fatalf("crash counted on a graceful stop: %+v", f)
	}
	if !r.sup.Done() {
		t.Fatal("Done = false after every worker exited")
	}
	// A reset while stopping does not spawn either.
	if err := r.sup.Reset(r.ctx, w0, at(14*time.Second)); err != nil {
		t.Fatal(err)
	}
	for d := 14 * time.Second; d < 5*time.Minute; d += time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	for _, c := range r.procs.calls[before:] {
		if c.op == "spawn" {
			t.Fatalf("spawn after Stop: %+v", r.procs.calls[before:])
		}
	}
}

func TestPersistedRestartStateReloaded(t *testing.T) {
	st := memstore.New(1)
	mod := func(c *supervisor.Config) { c.Restart.WindowLimit = 1 }
	r1 := newRigOn(t, st, 2, mod)
	r1.sup.Start(r1.ctx, t0)
	r1.exit(w0, 1, at(time.Second))
	r1.sup.Tick(r1.ctx, at(2*time.Second))
	r1.exit(w0, 1, at(3*time.Second)) // second death within the window: failed
	r1.exit(w1, 1, at(3*time.Second)) // one restart on record
	r1.wantStatus(w0, at(3*time.Second), health.Failed)

	// The app restarts later on the same store.
	later := 20 * time.Minute
	r2 := newRigOn(t, st, 2, mod)
	r2.sup.Start(r2.ctx, at(later))
	if n := r2.procs.count("spawn", w0); n != 0 {
		t.Fatalf("failed component spawned after app restart (%d)", n)
	}
	if n := r2.procs.count("spawn", w1); n != 1 {
		t.Fatalf("spawns of %s = %d, want 1", w1, n)
	}
	r2.wantStatus(w0, at(later), health.Failed)
	if in := r2.info(w0); !in.Failed || in.Policy.FailureReason == "" {
		t.Fatalf("info = %+v", in)
	}
	if f := r2.ev.of(event.Failed, w0); len(f) != 1 || !strings.Contains(f[0].Reason, "persisted") {
		t.Fatalf("failed events = %+v", f)
	}
	for d := later; d < later+10*time.Minute; d += time.Second {
		r2.sup.Tick(r2.ctx, at(d))
	}
	if n := r2.procs.count("spawn", w0); n != 0 {
		t.Fatalf("failed component spawned on Tick (%d)", n)
	}
	// w1 continues its backoff curve: Consecutive was 1, so the next backoff is 2 s.
	r2.exit(w1, 1, at(later+10*time.Minute))
	rs := r2.ev.of(event.RestartScheduled, w1)
	if len(rs) != 1 || rs[0].BackoffMs != 2000 || rs[0].RestartCount != 2 {
		t.Fatalf("restart_scheduled after reload = %+v, want backoff 2000, count 2", rs)
	}
}

func TestResetClearsFailureAndSpawns(t *testing.T) {
	r := newRig(t, 1, func(c *supervisor.Config) { c.Restart.WindowLimit = 1 })
	r.sup.Start(r.ctx, t0)
	r.exit(w0, 1, at(time.Second))
	r.sup.Tick(r.ctx, at(2*time.Second))
	r.exit(w0, 1, at(3*time.Second))
	r.wantStatus(w0, at(3*time.Second), health.Failed)
	for d := 3 * time.Second; d < time.Minute; d += time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.count("spawn", w0); n != 2 {
		t.Fatalf("spawns while failed = %d, want 2", n)
	}
	if err := r.sup.Reset(r.ctx, w0, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := r.procs.count("spawn", w0); n != 3 {
		t.Fatalf("spawns after Reset = %d, want 3", n)
	}
	r.wantStatus(w0, at(time.Minute), health.Pending)
	in := r.info(w0)
	if in.Failed || in.Policy.Failed() || in.Policy.RestartCount != 0 || in.Policy.Consecutive != 0 || len(in.Policy.Recent) != 0 {
		t.Fatalf("policy after Reset = %+v", in.Policy)
	}
	if ps, ok := r.st.RestartState("node-a/" + w0); !ok || ps.Failed() || ps.RestartCount != 0 {
		t.Fatalf("persisted state after Reset = %+v", ps)
	}
	// The counters start over: next death backs off 1 s.
	r.exit(w0, 1, at(2*time.Minute))
	if rs := r.ev.of(event.RestartScheduled, w0); rs[len(rs)-1].BackoffMs != 1000 {
		t.Fatalf("backoff after reset = %d ms", rs[len(rs)-1].BackoffMs)
	}
	if err := r.sup.Reset(r.ctx, "worker:discovery:9", at(2*time.Minute)); err == nil {
		t.Fatal("Reset of an unknown component succeeded")
	}
}

func TestOlderGenerationIgnored(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	r.exit(w0, 1, at(2*time.Second))
	r.sup.Tick(r.ctx, at(3*time.Second)) // gen 2
	if g := r.gen(w0); g != 2 {
		t.Fatalf("gen = %d", g)
	}
	old := frame.Frame{ComponentID: w0, Status: "ok", Phase: health.Idle}
	r.sup.PipeData(w0, 1, frame.Append(nil, &old), at(4*time.Second))
	r.wantStatus(w0, at(4*time.Second), health.Pending)
	if in := r.info(w0); !in.LastFrame.IsZero() || in.FramesDropped != 0 {
		t.Fatalf("old-generation frame observed: %+v", in)
	}
	r.sup.PipeClosed(w0, 1, at(4*time.Second))
	r.sup.Exited(r.ctx, w0, 1, -1, at(4*time.Second))
	if in := r.info(w0); !in.Running || in.RestartPending {
		t.Fatalf("old-generation exit handled: %+v", in)
	}
	if n := r.procs.signals(w0, supervisor.Kill); n != 0 {
		t.Fatalf("old-generation EOF killed the new process")
	}
	if n := len(r.ev.of(event.Exit, w0)); n != 1 {
		t.Fatalf("exit events = %d, want 1", n)
	}
}

func TestPipeClosedKillsThenExitRestarts(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	r.sup.PipeClosed(w0, 1, at(2*time.Second))
	r.wantStatus(w0, at(2*time.Second), health.Unhealthy)
	r.sup.Tick(r.ctx, at(2*time.Second+999*time.Millisecond))
	if n := r.procs.signals(w0, supervisor.Kill); n != 0 {
		t.Fatalf("killed %d times within the pipe-close grace", n)
	}
	r.sup.Tick(r.ctx, at(3*time.Second))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills after EOF and the grace = %d, want 1", n)
	}
	r.exit(w0, -1, at(3*time.Second))
	if r.sup.PendingTimers(w0) != 1 {
		t.Fatal("no restart after EOF")
	}
	if ex := r.ev.of(event.Exit, w0); len(ex) != 1 || ex[0].Reason != "frame pipe closed" {
		t.Fatalf("exit = %+v", ex)
	}
}

func TestPipeClosedThenExitIsAnOrdinaryDeath(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	r.sup.PipeClosed(w0, 1, at(2*time.Second))
	r.exit(w0, 0, at(2*time.Second))
	if n := r.procs.signals(w0, supervisor.Kill); n != 0 {
		t.Fatalf("an exiting process was killed %d times", n)
	}
	if ex := r.ev.of(event.Exit, w0); len(ex) != 1 || ex[0].Reason != "exited with code 0" {
		t.Fatalf("exit = %+v", ex)
	}
}

func TestSpoofedAndGarbageFramesDropped(t *testing.T) {
	r := newRig(t, 2, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.BackingOff, "", 0)
	r.wantStatus(w0, at(2*time.Second), health.Unhealthy)

	spoof := frame.Frame{ComponentID: w1, Status: "ok", Phase: health.Idle}
	long := append([]byte(frame.Prefix+`{"component_id":"`+w0+`","status":"ok","x":"`), make([]byte, 70<<10)...)
	for i := len(long) - (70 << 10); i < len(long); i++ {
		long[i] = 'a'
	}
	long = append(long, "\"}\n"...)
	lines := [][]byte{
		[]byte("garbage without prefix\n"),
		[]byte("HEALTH|{not json\n"),
		[]byte(`HEALTH|{"status":"ok","phase":"idle"}` + "\n"),
		frame.Append(nil, &spoof),
		long,
	}
	for i, l := range lines {
		r.sup.PipeData(w0, r.gen(w0), l, at(time.Duration(2+i)*time.Second))
	}
	now := at(7 * time.Second)
	in := r.info(w0)
	if in.FramesDropped != len(lines) {
		t.Fatalf("FramesDropped = %d, want %d", in.FramesDropped, len(lines))
	}
	if !in.LastFrame.Equal(at(time.Second)) || in.Phase != health.BackingOff {
		t.Fatalf("dropped lines changed facts: %+v", in)
	}
	r.wantStatus(w0, now, health.Unhealthy)
	r.wantStatus(w1, now, health.Pending)
	if in1 := r.info(w1); !in1.LastFrame.IsZero() {
		t.Fatalf("spoofed frame credited to %s", w1)
	}
	if n := len(r.ev.of(event.FrameDropped, w0)); n != len(lines) {
		t.Fatalf("frame_dropped events = %d", n)
	}
	// Spoofed frames alone are no sign of life: the hang is still detected.
	for d := 8 * time.Second; d <= 31*time.Second; d += time.Second {
		r.sup.PipeData(w0, r.gen(w0), frame.Append(nil, &spoof), at(d))
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills = %d, want 1 (hang despite spoofed frames)", n)
	}
}

func TestDeadWorkerClaimsReleasedAndPoisonQuarantined(t *testing.T) {
	r := newRig(t, 1, nil)
	r.addFiles("f1", "f2")
	r.sup.Start(r.ctx, t0)
	wid := r.sup.WorkerID(w0)
	if wid != "inst-a/"+w0 {
		t.Fatalf("WorkerID = %q", wid)
	}
	r.claim("f1", wid, at(time.Second))
	r.exit(w0, -1, at(2*time.Second))
	if _, ok := r.st.ClaimOf("f1"); ok {
		t.Fatal("claim not released at death")
	}
	f, _ := r.st.Peek("f1")
	if f.CrashCount != 1 || f.Failed {
		t.Fatalf("after first crash: %+v", f)
	}
	if got, _ := r.st.Discover(r.ctx, at(2*time.Second), "", 10); len(got) != 2 || got[0].Key != "f1" {
		t.Fatalf("f1 not rediscoverable: %+v", got)
	}
	if rel := r.ev.of(event.Release, w0); len(rel) != 1 || rel[0].File != "f1" || rel[0].Count != 1 || rel[0].Cause != supervisor.ReleaseDied {
		t.Fatalf("release events = %+v", rel)
	}
	if len(r.ev.of(event.Quarantined, "")) != 0 {
		t.Fatal("quarantined after one crash")
	}

	r.sup.Tick(r.ctx, at(3*time.Second)) // gen 2
	r.claim("f1", wid, at(4*time.Second))
	r.exit(w0, 1, at(5*time.Second))
	f, _ = r.st.Peek("f1")
	if f.CrashCount != 2 || !f.Failed || f.LastError != "crashed a worker (quarantine_after 2 reached)" {
		t.Fatalf("after second crash: %+v", f)
	}
	if q := r.ev.of(event.Quarantined, ""); len(q) != 1 || q[0].File != "f1" {
		t.Fatalf("quarantined events = %+v", q)
	}
	if got, _ := r.st.Discover(r.ctx, at(5*time.Second), "", 10); len(got) != 1 || got[0].Key != "f2" {
		t.Fatalf("discover after quarantine = %+v", got)
	}
	// The worker itself is not failed by a poison file.
	if r.sup.Status(w0, at(5*time.Second)) == health.Failed {
		t.Fatal("worker failed")
	}
}

// refusedQuarantine is a store whose Quarantine always fails, and counts
// its calls.
type refusedQuarantine struct {
	*memstore.Store
	calls int
}

func (q *refusedQuarantine) Quarantine(context.Context, string, string) error {
	q.calls++
	return errors.New("quarantine: deadline exceeded")
}

// TestPoisonQuarantinedByTheReleaseItself: the crash that brings a file to
// quarantine_after (3 here) quarantines it in the release's own store
// operation — no separate write that could fail (or leave the file
// eligible meanwhile) — and the configured threshold is the store's.
func TestPoisonQuarantinedByTheReleaseItself(t *testing.T) {
	ms := memstore.New(1)
	qs := &refusedQuarantine{Store: ms}
	r := newRigThrough(t, ms, qs, 1, func(c *supervisor.Config) { c.QuarantineAfter = 3 })
	r.addFiles("f1", "f2")
	r.sup.Start(r.ctx, t0)
	wid := r.sup.WorkerID(w0)
	now := t0
	for crash := 1; crash <= 3; crash++ {
		now = now.Add(time.Minute) // past any backoff: the next generation runs
		r.sup.Tick(r.ctx, now)
		r.claim("f1", wid, now)
		r.exit(w0, 1, now)
		f, _ := ms.Peek("f1")
		if f.CrashCount != crash || f.Failed != (crash == 3) {
			t.Fatalf("after crash %d: %+v", crash, f)
		}
	}
	if f, _ := ms.Peek("f1"); f.LastError != "crashed a worker (quarantine_after 3 reached)" {
		t.Fatalf("quarantined file's error = %q", f.LastError)
	}
	if q := r.ev.of(event.Quarantined, ""); len(q) != 1 || q[0].File != "f1" || q[0].Count != 3 {
		t.Fatalf("quarantined events = %+v", q)
	}
	if e := r.ev.of(event.StoreError, ""); len(e) != 0 || qs.calls != 0 {
		t.Fatalf("store errors %+v, Quarantine calls %d: want the quarantine done by the release", e, qs.calls)
	}
	if got, _ := ms.Discover(r.ctx, now, "", 10); len(got) != 1 || got[0].Key != "f2" {
		t.Fatalf("discover after quarantine = %+v", got)
	}
}

func TestCleanExitDoesNotCountCrash(t *testing.T) {
	r := newRig(t, 1, nil)
	r.addFiles("f1")
	r.sup.Start(r.ctx, t0)
	r.claim("f1", r.sup.WorkerID(w0), at(time.Second))
	r.exit(w0, 0, at(2*time.Second))
	if _, ok := r.st.ClaimOf("f1"); ok {
		t.Fatal("claim not released")
	}
	if f, _ := r.st.Peek("f1"); f.CrashCount != 0 {
		t.Fatalf("exit 0 counted as a crash: %+v", f)
	}
}

func TestReleaseRetriedWhileStoreDown(t *testing.T) {
	r := newRig(t, 1, nil)
	r.addFiles("f1")
	r.sup.Start(r.ctx, t0)
	r.claim("f1", r.sup.WorkerID(w0), at(time.Second))
	r.st.SetFault(memstore.Down)
	r.exit(w0, -1, at(2*time.Second))
	if _, ok := r.st.ClaimOf("f1"); !ok {
		t.Fatal("claim gone although the store is down")
	}
	for d := 2 * time.Second; d <= 20*time.Second; d += time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.count("spawn", w0); n != 1 {
		t.Fatalf("respawned before the claims were released (%d spawns)", n)
	}
	r.wantStatus(w0, at(20*time.Second), health.Unhealthy)
	r.st.SetFault(memstore.Healthy)
	r.procs.onSpawn = func(comp string, gen uint64) {
		if _, ok := r.st.ClaimOf("f1"); ok {
			t.Errorf("spawned gen %d before the dead worker's claim was released", gen)
		}
	}
	r.sup.Tick(r.ctx, at(21*time.Second))
	if _, ok := r.st.ClaimOf("f1"); ok {
		t.Fatal("claim not released once the store is back")
	}
	if f, _ := r.st.Peek("f1"); f.CrashCount != 1 {
		t.Fatalf("crash count = %d, want 1", f.CrashCount)
	}
	if n := r.procs.count("spawn", w0); n != 2 {
		t.Fatalf("spawns after release = %d, want 2", n)
	}
	if st, ok := r.st.RestartState("node-a/" + w0); !ok || st.RestartCount != 1 {
		t.Fatalf("restart state not persisted after the outage: %+v %v", st, ok)
	}
}

func TestLeaseRenewal(t *testing.T) {
	r := newRig(t, 2, nil)
	r.addFiles("f1", "f2", "f3")
	r.sup.Start(r.ctx, t0)
	r.claim("f1", r.sup.WorkerID(w0), t0)
	r.claim("f2", "inst-b/"+w0, t0) // another host's worker
	r.claim("f3", r.sup.WorkerID(w1), t0)
	lease := func(f string) time.Time {
		c, ok := r.st.ClaimOf(f)
		if !ok {
			t.Fatalf("claim %s gone", f)
		}
		return c.LeaseUntil
	}
	r.sup.Tick(r.ctx, at(10*time.Second-time.Millisecond))
	if !lease("f1").Equal(at(30 * time.Second)) {
		t.Fatalf("renewed before lease_ttl/3: %s", lease("f1").Sub(t0))
	}
	r.sup.Tick(r.ctx, at(10*time.Second))
	for _, f := range []string{"f1", "f3"} {
		if !lease(f).Equal(at(40 * time.Second)) {
			t.Fatalf("%s lease = %s, want 40s", f, lease(f).Sub(t0))
		}
	}
	if !lease("f2").Equal(at(30 * time.Second)) {
		t.Fatalf("another host's claim renewed: %s", lease("f2").Sub(t0))
	}
	// A failed renewal is retried on the next tick.
	r.st.SetFault(memstore.Down)
	r.sup.Tick(r.ctx, at(20*time.Second))
	r.st.SetFault(memstore.Healthy)
	r.sup.Tick(r.ctx, at(20*time.Second+time.Millisecond))
	if !lease("f1").Equal(at(50*time.Second + time.Millisecond)) {
		t.Fatalf("f1 lease after a failed renewal = %s, want 50.001s", lease("f1").Sub(t0))
	}
	// The next renewal is lease_ttl/3 after the successful one.
	r.sup.Tick(r.ctx, at(30*time.Second))
	if !lease("f1").Equal(at(50*time.Second + time.Millisecond)) {
		t.Fatalf("renewed too early: %s", lease("f1").Sub(t0))
	}
	r.sup.Tick(r.ctx, at(30*time.Second+time.Millisecond))
	if !lease("f1").Equal(at(60*time.Second + time.Millisecond)) {
		t.Fatalf("f1 lease = %s, want 60.001s", lease("f1").Sub(t0))
	}
	// A dead worker is not live: its claims are released, not renewed.
	r.exit(w1, -1, at(31*time.Second))
	if _, ok := r.st.ClaimOf("f3"); ok {
		t.Fatal("dead worker's claim kept")
	}
}

func TestHealthyResetsBackoff(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.exit(w0, 1, at(time.Second))
	r.sup.Tick(r.ctx, at(2*time.Second)) // gen 2, Consecutive 1
	end := 2*time.Second + 5*time.Minute + 10*time.Second
	for d := 3 * time.Second; d <= end; d += time.Second {
		if d%(5*time.Second) == 0 || d == 3*time.Second {
			r.frame(w0, at(d), health.Idle, "", 0)
		}
		r.sup.Tick(r.ctx, at(d))
	}
	if len(r.ev.of(event.BackoffReset, w0)) != 1 {
		t.Fatalf("backoff_reset events = %+v", r.ev.of(event.BackoffReset, w0))
	}
	if in := r.info(w0); in.Policy.Consecutive != 0 || in.Policy.RestartCount != 1 {
		t.Fatalf("policy = %+v", in.Policy)
	}
	r.exit(w0, 1, at(end))
	if rs := r.ev.of(event.RestartScheduled, w0); rs[len(rs)-1].BackoffMs != 1000 {
		t.Fatalf("backoff after healthy_reset = %d ms, want 1000", rs[len(rs)-1].BackoffMs)
	}
}

func TestStoreDownAtStartDefersSpawn(t *testing.T) {
	st := memstore.New(1)
	st.SetFault(memstore.Down)
	r := newRigOn(t, st, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.sup.Tick(r.ctx, at(time.Second))
	if n := r.procs.count("spawn", w0); n != 0 {
		t.Fatalf("spawned without loading restart state (%d)", n)
	}
	st.SetFault(memstore.Healthy)
	r.sup.Tick(r.ctx, at(2*time.Second))
	if n := r.procs.count("spawn", w0); n != 1 {
		t.Fatalf("spawns once the store is back = %d, want 1", n)
	}

	// A stop while the state is still unloaded: the load that succeeds
	// later spawns nothing.
	st.SetFault(memstore.Down)
	r = newRigOn(t, st, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.sup.Stop(at(time.Second))
	st.SetFault(memstore.Healthy)
	for d := 2 * time.Second; d <= 10*time.Second; d += time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.count("spawn", w0); n != 0 {
		t.Fatalf("spawns after Stop = %d, want 0", n)
	}
	if !r.sup.Done() {
		t.Fatal("stop not done")
	}
}

// failingRelease is a store whose ReleaseWorker fails while fail is set.
type failingRelease struct {
	*memstore.Store
	fail bool
}

func (f *failingRelease) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	if f.fail {
		return nil, errors.New("release: deadline exceeded")
	}
	return f.Store.ReleaseWorker(ctx, workerID, death, crash)
}

func TestLeasesOfDeadWorkerNotRenewed(t *testing.T) {
	ms := memstore.New(1)
	fs := &failingRelease{Store: ms, fail: true}
	procs := &fakeProcs{}
	sup, err := supervisor.New(supervisor.DefaultConfig("inst-a", "node-a", 2), procs, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ms.UpsertFiles(ctx, []store.File{{Key: "f0", Size: 1, NeedsTagging: true, IsValid: true}, {Key: "f1", Size: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	sup.Start(ctx, t0)
	for i, f := range []string{"f0", "f1"} {
		if _, err := ms.Claim(ctx, store.Claim{FileKey: f, WorkerID: sup.WorkerID(supervisor.ComponentID(i)), ClaimedAt: t0, LeaseUntil: at(30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	sup.Exited(ctx, w1, 1, -1, at(time.Second)) // its release keeps failing
	sup.Tick(ctx, at(10*time.Second))
	if c, _ := ms.ClaimOf("f0"); !c.LeaseUntil.Equal(at(40 * time.Second)) {
		t.Fatalf("live worker's lease = %s", c.LeaseUntil.Sub(t0))
	}
	if c, ok := ms.ClaimOf("f1"); !ok || !c.LeaseUntil.Equal(at(30*time.Second)) {
		t.Fatalf("dead worker's lease renewed: %+v %v", c, ok)
	}
	if procs.count("spawn", w1) != 1 {
		t.Fatal("dead worker respawned before its claims were released")
	}
}

// cold_start_max counts from the spawn whatever pending phase the first
// frame carries: a worker whose first frame says loading_models (50 s after
// the spawn) is killed at spawn + 15 min, as one that first says
// initializing is, not 50 s later.
func TestColdStartMaxFromSpawnWhenFirstFrameLoads(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	limit := 15 * time.Minute
	for d := 50 * time.Second; d < limit; d += 5 * time.Second {
		r.frame(w0, at(d), health.LoadingModels, "", 0)
		r.sup.Tick(r.ctx, at(d))
	}
	r.frame(w0, at(limit), health.LoadingModels, "", 0)
	r.sup.Tick(r.ctx, at(limit))
	if k := r.ev.of(event.Kill, w0); len(k) != 1 || !k[0].T.Equal(at(limit)) {
		t.Fatalf("kills = %+v, want one at spawn + cold_start_max", k)
	}
}

// A reset before Start only clears and saves the state: Start spawns, once.
// Spawning in Reset too left a first process no one watched or stopped.
func TestResetBeforeStartSpawnsOnce(t *testing.T) {
	r := newRig(t, 1, nil)
	if err := r.sup.Reset(r.ctx, w0, t0); err != nil {
		t.Fatal(err)
	}
	if n := r.procs.count("spawn", w0); n != 0 {
		t.Fatalf("spawns before Start = %d, want 0", n)
	}
	r.sup.Start(r.ctx, t0)
	if n := r.procs.count("spawn", w0); n != 1 {
		t.Fatalf("spawns after Start = %d, want 1", n)
	}
}

// failingSave is a store whose SaveRestart fails while fail is set.
type failingSave struct {
	*memstore.Store
	fail bool
}

func (f *failingSave) SaveRestart(ctx context.Context, key string, st restart.State) error {
	if f.fail {
		return errors.New("save restart: database is locked")
	}
	return f.Store.SaveRestart(ctx, key, st)
}

// A stop is not done while a restart state is unwritten: a worker given up
// on while the store refused the write would otherwise be failed only in
// memory, and the next start of the app would spawn it again. Once the store
// answers, the stop completes and the next start leaves the worker failed.
func TestStopWaitsForRestartStateWrite(t *testing.T) {
	ms := memstore.New(1)
	fs := &failingSave{Store: ms}
	cfg := supervisor.DefaultConfig("inst-a", "node-a", 1)
	cfg.Restart.WindowLimit = 1
	procs := &fakeProcs{}
	sup, err := supervisor.New(cfg, procs, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sup.Start(ctx, t0)
	sup.Exited(ctx, w0, 1, 1, at(time.Second)) // restart 1: granted and saved
	sup.Tick(ctx, at(2*time.Second))           // generation 2
	fs.fail = true
	sup.Exited(ctx, w0, 2, 1, at(3*time.Second)) // given up on; the write fails
	if got := sup.Status(w0, at(3*time.Second)); got != health.Failed {
		t.Fatalf("status %s, want failed", got)
	}
	sup.Stop(at(4 * time.Second))
	sup.Tick(ctx, at(5*time.Second))
	if sup.Done() {
		t.Fatal("stop done with the failed state not written")
	}
	// Held back, the restart is no deadline: the loop waits for its next
	// tick instead of spinning on a write that fails.
	if d, ok := sup.Deadline(); ok {
		t.Fatalf("Deadline = %s while the restart waits for its state write", d.Sub(t0))
	}
	fs.fail = false
	sup.Tick(ctx, at(6*time.Second))
	if !sup.Done() {
		t.Fatal("stop not done once the state is written")
	}
	again := &fakeProcs{}
	next, err := supervisor.New(cfg, again, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	next.Start(ctx, at(time.Minute))
	if n := again.count("spawn", w0); n != 0 {
		t.Fatalf("the next start spawned the failed worker %d time(s)", n)
	}
}

// killedExactlyAt ticks a millisecond before d, where id must not be
// killed, then at d, where it must be killed once.
func (r *rig) killedExactlyAt(id string, d time.Time) {
	r.t.Helper()
	r.sup.Tick(r.ctx, d.Add(-time.Millisecond))
	if n := r.procs.signals(id, supervisor.Kill); n != 0 {
		r.t.Fatalf("%s killed a millisecond before its deadline %s", id, d.Sub(t0))
	}
	r.sup.Tick(r.ctx, d)
	if n := r.procs.signals(id, supervisor.Kill); n != 1 {
		r.t.Fatalf("kills of %s at its deadline %s = %d, want 1", id, d.Sub(t0), n)
	}
}

// The stop grace ends on a deadline of its own: a driver that sleeps until
// Deadline kills a worker still running at the end of the grace then, not
// at the next check tick after it.
func TestStopGraceIsADeadline(t *testing.T) {
	r := newRig(t, 1, nil)
	const id = "worker:discovery:0"
	r.sup.Start(r.ctx, t0)
	r.frame(id, t0.Add(time.Second), health.Processing, "f1", 1)
	r.sup.Stop(t0.Add(2 * time.Second))
	d, ok := r.sup.Deadline()
	if want := t0.Add(2*time.Second + r.cfg.StopGrace); !ok || !d.Equal(want) {
		t.Fatalf("Deadline during the stop = %v %v, want the grace's end %v", d, ok, want)
	}
	r.killedExactlyAt(id, d)
	if _, ok := r.sup.Deadline(); ok {
		t.Fatal("a deadline remains once the worker is being killed")
	}
}

// heldStore stands for a store whose write lock a hung worker holds:
// while locked, every write the supervisor makes waits (SQLite's busy
// timeout, in production) and fails. Each call is appended to log, which
// the rig's Signal hook shares, so a test sees what came first.
type heldStore struct {
	*memstore.Store
	locked bool
	log    *[]string
}

func (l *heldStore) wait(op string) error {
	*l.log = append(*l.log, "store "+op)
	if l.locked {
		return errors.New(op + ": database is locked (waited 5s busy_timeout)")
	}
	return nil
}

func (l *heldStore) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	if err := l.wait("release"); err != nil {
		return nil, err
	}
	return l.Store.ReleaseWorker(ctx, workerID, death, crash)
}

func (l *heldStore) SaveRestart(ctx context.Context, key string, st restart.State) error {
	if err := l.wait("save restart"); err != nil {
		return err
	}
	return l.Store.SaveRestart(ctx, key, st)
}

func (l *heldStore) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	if err := l.wait("renew leases"); err != nil {
		return 0, err
	}
	return l.Store.RenewLeases(ctx, workerIDs, until)
}

// A worker that hangs while it holds the store's write lock is killed
// before the tick waits on that lock: every store write of the tick would
// wait out the busy timeout first (a release and a restart state owed for
// another worker, the lease renewal), and only the kill frees the lock. In
// the real-process suite the kill came seconds late, after each wait.
func TestHungLockHolderKilledBeforeTheTickWaitsOnTheStore(t *testing.T) {
	var log []string
	ls := &heldStore{Store: memstore.New(1), log: &log}
	procs := &fakeProcs{onSignal: func(comp string, _ uint64, sig supervisor.Signal) {
		log = append(log, "signal "+sig.String()+" "+comp)
	}}
	sup, err := supervisor.New(supervisor.DefaultConfig("inst-a", "node-a", 2), procs, ls, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sup.Start(ctx, t0)
	gen := func(id string) uint64 { in, _ := sup.Info(id); return in.Gen }
	feed := func(id string, now time.Time) {
		f := frame.Frame{ComponentID: id, Status: "ok", Phase: health.Idle}
		sup.PipeData(id, gen(id), frame.Append(nil, &f), now)
	}
	feed(w0, at(time.Second))
	feed(w1, at(time.Second))
	// w1 stops framing (SIGSTOP) while inside a write transaction; w0 then
	// crashes, and its release and restart state cannot be written.
	ls.locked = true
	feed(w0, at(20*time.Second))
	sup.Exited(ctx, w0, gen(w0), 2, at(25*time.Second))
	log = nil
	sup.Tick(ctx, at(31*time.Second)) // w1's hang_after (30 s) is up
	if len(log) == 0 || log[0] != "signal SIGKILL "+w1 {
		t.Fatalf("tick at w1's hang deadline did %q; want the kill of %s first, before any store write waits on the lock it holds", log, w1)
	}
	if !slices.Contains(log, "store release") || !slices.Contains(log, "store save restart") {
		t.Fatalf("tick did %q; want w0's release and restart state retried after the kill", log)
	}
}

// A restart is spawned only once the restart state that counts it is
// written: a restart the store never learnt of would be forgotten by the
// next app start, and a crash loop would escape its limits that way.
func TestRestartWaitsForItsStateWrite(t *testing.T) {
	ms := memstore.New(1)
	fs := &failingSave{Store: ms}
	procs := &fakeProcs{}
	sup, err := supervisor.New(supervisor.DefaultConfig("inst-a", "node-a", 1), procs, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sup.Start(ctx, t0)
	fs.fail = true
	sup.Exited(ctx, w0, 1, 1, at(time.Second)) // backoff 1 s; its release works, its state write does not
	for d := 2 * time.Second; d <= 5*time.Second; d += time.Second {
		sup.Tick(ctx, at(d))
	}
	if n := procs.count("spawn", w0); n != 1 {
		t.Fatalf("%d spawns while the restart state could not be written, want only the first", n)
	}
	// Held back, the restart is no deadline: the loop waits for its next
	// tick instead of spinning on a write that fails.
	if d, ok := sup.Deadline(); ok {
		t.Fatalf("Deadline = %s while the restart waits for its state write", d.Sub(t0))
	}
	fs.fail = false
	sup.Tick(ctx, at(6*time.Second))
	if n := procs.count("spawn", w0); n != 2 {
		t.Fatalf("%d spawns once the state is written, want 2", n)
	}
	if st, ok := ms.RestartState("node-a/" + w0); !ok || st.RestartCount != 1 {
		t.Fatalf("persisted restart state = %+v %v", st, ok)
	}
}

// A worker being killed no longer has its leases renewed: if its exit never
// comes (a process stuck in an uninterruptible wait), the leases run out
// and claim cleanup returns its file.
func TestLeasesOfKilledWorkerNotRenewed(t *testing.T) {
	r := newRig(t, 2, nil)
	r.addFiles("f0", "f1")
	r.sup.Start(r.ctx, t0)
	r.claim("f0", r.sup.WorkerID(w0), t0)
	r.claim("f1", r.sup.WorkerID(w1), t0)
	r.frame(w0, at(time.Second), health.Processing, "f0", 1)
	for d := time.Second; d <= 40*time.Second; d += time.Second {
		r.frame(w1, at(d), health.Processing, "f1", int64(d/time.Second)) // w0 sends nothing: hang
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("hung worker killed %d times, want once", n)
	}
	// No exit is reported: the kill is still in flight.
	c0, _ := r.st.ClaimOf("f0")
	c1, _ := r.st.ClaimOf("f1")
	if !c1.LeaseUntil.After(at(60 * time.Second)) {
		t.Fatalf("live worker's lease = %s, want renewed", c1.LeaseUntil.Sub(t0))
	}
	if c0.LeaseUntil.After(at(60 * time.Second)) { // its last renewal came before the kill at 31 s
		t.Fatalf("killed worker's lease renewed to %s", c0.LeaseUntil.Sub(t0))
	}
}

// A reset, like a restart, spawns only once its state is written: a reset
// the store never learnt of would leave the worker failed at the next app
// start while it ran now.
func TestResetWaitsForItsStateWrite(t *testing.T) {
	ms := memstore.New(1)
	fs := &failingSave{Store: ms}
	procs := &fakeProcs{}
	cfg := supervisor.DefaultConfig("inst-a", "node-a", 1)
	cfg.Restart.WindowLimit = 1
	sup, err := supervisor.New(cfg, procs, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sup.Start(ctx, t0)
	sup.Exited(ctx, w0, 1, 1, at(time.Second))
	sup.Tick(ctx, at(2*time.Second))
	sup.Exited(ctx, w0, 2, 1, at(3*time.Second)) // failed: the window limit
	fs.fail = true
	if err := sup.Reset(ctx, w0, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	sup.Tick(ctx, at(time.Minute+time.Second))
	if n := procs.count("spawn", w0); n != 2 {
		t.Fatalf("%d spawns after a reset whose state could not be written, want 2 (none new)", n)
	}
	fs.fail = false
	sup.Tick(ctx, at(time.Minute+2*time.Second))
	if n := procs.count("spawn", w0); n != 3 {
		t.Fatalf("%d spawns once the reset is written, want 3", n)
	}
	if st, ok := ms.RestartState("node-a/" + w0); !ok || st.Failed() {
		t.Fatalf("persisted state = %+v %v, want the reset", st, ok)
	}
}

// healthy_reset counts an unbroken healthy run: an unhealthy status (a
// backing_off frame) starts it over, and the reset comes healthy_reset
// after the return to healthy, not after the first healthy status.
func TestHealthyResetNeedsAnUnbrokenRun(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.exit(w0, 1, at(time.Second))
	r.sup.Tick(r.ctx, at(2*time.Second)) // gen 2, Consecutive 1
	back := 185 * time.Second            // healthy again from here
	for d := 3 * time.Second; d <= back+5*time.Minute; d += time.Second {
		if d%(5*time.Second) == 0 || d == 3*time.Second {
			phase := health.Idle
			if d == 180*time.Second {
				phase = health.BackingOff
			}
			r.frame(w0, at(d), phase, "", 0)
		}
		r.sup.Tick(r.ctx, at(d))
		if d == 181*time.Second {
			r.wantStatus(w0, at(d), health.Unhealthy)
		}
		if n := len(r.ev.of(event.BackoffReset, w0)); d < back+5*time.Minute && n != 0 {
			t.Fatalf("backoff_reset at %s, %s after the return to healthy", d, d-back)
		}
	}
	if n := len(r.ev.of(event.BackoffReset, w0)); n != 1 {
		t.Fatalf("backoff_reset events = %d, want 1 at healthy_reset after the return to healthy", n)
	}
}

// A job's stall clock stops with the job: a worker idle (frames without a
// current job) for longer than stall_after after a job is not killed.
func TestStallClockEndsWithTheJob(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	for d := time.Second; d <= 30*time.Minute; d += time.Second {
		if d%(5*time.Second) == 0 || d == time.Second {
			if d <= time.Minute {
				r.frame(w0, at(d), health.Processing, "f1", 1)
			} else {
				r.frame(w0, at(d), health.Idle, "", 0)
			}
		}
		r.sup.Tick(r.ctx, at(d))
		if d == time.Minute+5*time.Second {
			if in := r.info(w0); in.CurrentJob != "" || in.Progress != 0 {
				t.Fatalf("info after the job ended = %+v, want no current job", in)
			}
		}
	}
	if k := r.ev.of(event.Kill, w0); len(k) != 0 {
		t.Fatalf("idle worker killed: %+v", k)
	}
}

// A stop is not done while a dead worker's claims are unreleased: they
// would stay claimed until their leases ran out. Once the store answers,
// the claims are released and the stop completes.
func TestStopWaitsForTheRelease(t *testing.T) {
	r := newRig(t, 1, nil)
	r.addFiles("f1")
	r.sup.Start(r.ctx, t0)
	r.claim("f1", r.sup.WorkerID(w0), at(time.Second))
	r.sup.Stop(at(2 * time.Second))
	r.st.SetFault(memstore.Down)
	r.exit(w0, 0, at(3*time.Second))
	r.sup.Tick(r.ctx, at(4*time.Second))
	if r.sup.Done() {
		t.Fatal("stop done with the dead worker's claim unreleased")
	}
	r.st.SetFault(memstore.Healthy)
	r.sup.Tick(r.ctx, at(5*time.Second))
	if _, ok := r.st.ClaimOf("f1"); ok {
		t.Fatal("claim kept once the store is back")
	}
	if !r.sup.Done() {
		t.Fatal("stop not done once the claims are released")
	}
}

// A worker ended by a signal is reported as such in its exit and
// restart_scheduled reasons ("killed by SIGKILL"), not as "exited with code
// -1"; a kill of the supervisor's own keeps its reason.
func TestSignaledDeathNamesTheSignal(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	r.sup.Signaled(r.ctx, w0, r.gen(w0), "SIGKILL", at(2*time.Second))
	ex := r.ev.of(event.Exit, w0)
	rs := r.ev.of(event.RestartScheduled, w0)
	if len(ex) != 1 || ex[0].Reason != "killed by SIGKILL" || ex[0].Code == nil || *ex[0].Code != -1 {
		t.Fatalf("exit = %+v, want reason \"killed by SIGKILL\", code -1", ex)
	}
	if len(rs) != 1 || rs[0].Reason != "killed by SIGKILL" {
		t.Fatalf("restart_scheduled = %+v", rs)
	}
}

// A hang's reason gives the time without a frame in whole seconds, not to
// the nanosecond.
func TestHangReasonRounded(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	end := 31*time.Second + 965823347*time.Nanosecond // 30.965823347 s without a frame
	for d := 10 * time.Second; d < end; d += 10 * time.Second {
		r.sup.Tick(r.ctx, at(d))
	}
	r.sup.Tick(r.ctx, at(end))
	if n := r.procs.signals(w0, supervisor.Kill); n != 1 {
		t.Fatalf("kills = %d, want 1", n)
	}
	r.sup.Signaled(r.ctx, w0, r.gen(w0), "SIGKILL", at(end))
	if ex := r.ev.of(event.Exit, w0); len(ex) != 1 || ex[0].Reason != "hang: no frame for 31s" {
		t.Fatalf("exit = %+v, want reason \"hang: no frame for 31s\"", ex)
	}
}
