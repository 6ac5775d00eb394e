package sim_test

// Property-based tests of the simulator driving the real core: random
// libraries, configurations and fault schedules, with the safety checker on
// (every case) and a liveness oracle (where the schedule lets the system
// recover).
//
// Knobs:
//
//	NOMARR_PROPERTY_CHECKS=N   cases per property (default 250; two properties)
//	-rapid.checks=N            same, rapid's own flag (wins over the default)
//	-rapid.seed=S / RAPID_SEED rapid's base seed (default: a fixed seed, so CI
//	                           is deterministic; set one to explore)
//
// A failing case prints the scenario as YAML (drop it into scenarios/ to
// replay it with `nomarr sim`) and the simulator seed.

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/rapidflags"
	"github.com/nomarr/nomarr/sim"
)

// defaultChecks: per property; two properties → 500 cases per `go test`.
// The seed is fixed (rapidflags.Seed) so that CI runs are reproducible;
// pass -rapid.seed (or RAPID_SEED) to explore other cases.
const defaultChecks = 250

// ---------------------------------------------------------------------------
// Generated cases

// genCase is one generated scenario plus what the generator knows about it.
type genCase struct {
	sc   *sim.Scenario
	seed uint64 // simulator seed (Options.Seed)

	// recoverable: generated in the mode whose faults all heal (most cases).
	recoverable bool
	// horizon: every fault effect ends by then (stop excepted); the rest of
	// the run is the fault-free tail.
	horizon time.Duration
	// need: how long a fault-free tail the library needs to be finished
	// (see tailNeed).
	need time.Duration

	workers      int
	stallAfter   time.Duration
	transientMax int // transient_retries
}

// Fault kinds the generator draws from.
const (
	kCrash = iota
	kHang
	kGPU
	kStoreDown
	kStoreSlow
	kErrorRate
	kPauseResume
	kRestartMain
	kInject
	kPartition
	kMainHang
	kLostReplies
	kReset
	kMainDie
	kKillInstance
	kPauseOnly
	nKinds
)

var frameKinds = []string{"garbage", "oversized", "spoofed", "bad_json", "missing_field"}

func comp(n int) string { return fmt.Sprintf("worker:discovery:%d", n) }

func dur(d time.Duration) sim.Duration { return sim.Duration(d) }

func secs(t *rapid.T, lo, hi int, label string) time.Duration {
	return time.Duration(rapid.IntRange(lo, hi).Draw(t, label)) * time.Second
}

// hasFault reports whether any of c's faults satisfies pred.
func hasFault(c *genCase, pred func(f *sim.Fault) bool) bool {
	for i := range c.sc.Faults {
		if pred(&c.sc.Faults[i]) {
			return true
		}
	}
	return false
}

// genScenario draws a scenario. In recoverable mode (about 3 in 4 cases) the
// faults are ones the system must recover from and the library is sized so
// that it can be finished in the fault-free tail (the last 60 % of the run);
// the other cases add faults that end the run's usefulness (stop, main death,
// killed instances, pause without resume) and small restart limits, for
// safety only.
func genScenario() *rapid.Generator[*genCase] {
	return rapid.Custom(func(t *rapid.T) *genCase {
		return drawScenario(t, rapid.IntRange(0, 3).Draw(t, "mode") != 0)
	})
}

// genScenarioMode draws scenarios of one mode only.
func genScenarioMode(recoverable bool) *rapid.Generator[*genCase] {
	return rapid.Custom(func(t *rapid.T) *genCase { return drawScenario(t, recoverable) })
}

func drawScenario(t *rapid.T, recoverable bool) *genCase {
	c := &genCase{recoverable: recoverable}
	c.seed = rapid.Uint64Range(1, 1<<62).Draw(t, "simSeed")
	c.workers = rapid.IntRange(1, 4).Draw(t, "workers")
	ninst := rapid.IntRange(1, 2).Draw(t, "instances")
	insts := []string{"a", "b"}[:ninst]
	jt := secs(t, 1, 90, "jobTime")

	cfg := map[string]any{"workers": c.workers}
	if rapid.Bool().Draw(t, "gpu") {
		cfg["gpu"] = true
	}
	if rapid.Bool().Draw(t, "tweakLease") {
		cfg["lease_ttl"] = secs(t, 10, 60, "leaseTTL").String()
	}
	if rapid.Bool().Draw(t, "tweakTiming") {
		// frame_interval < stale_after < hang_after.
		fi := secs(t, 1, 5, "frameInterval")
		stale := fi + secs(t, 1, 10, "staleExtra")
		hang := stale + secs(t, 1, 40, "hangExtra")
		cfg["frame_interval"], cfg["stale_after"], cfg["hang_after"] = fi.String(), stale.String(), hang.String()
	}
	if rapid.Bool().Draw(t, "tweakBackoff") {
		cfg["backoff_base"] = rapid.SampledFrom([]string{"500ms", "1s", "2s", "5s"}).Draw(t, "backoffBase")
	}
	if !c.recoverable && rapid.Bool().Draw(t, "smallLimits") {
		// Crash-loop limits that the faults below reach: workers fail.
		cfg["window_limit"] = rapid.IntRange(1, 3).Draw(t, "windowLimit")
		cfg["lifetime_limit"] = rapid.IntRange(1, 6).Draw(t, "lifetimeLimit")
		if rapid.Bool().Draw(t, "shortWindow") {
			cfg["window"] = "1m"
		}
	}
	c.transientMax = 5
	if !c.recoverable && rapid.Bool().Draw(t, "tweakRetries") {
		c.transientMax = rapid.IntRange(1, 5).Draw(t, "transientRetries")
		cfg["transient_retries"] = c.transientMax
	}
	c.stallAfter = 10 * time.Minute
	if rapid.Bool().Draw(t, "tweakStall") {
		c.stallAfter = rapid.SampledFrom([]time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}).Draw(t, "stallAfter")
		cfg["stall_after"] = c.stallAfter.String()
	}

	// Library. In recoverable mode its size is bounded so that the
	// work fits the tail of a run of at most 2 h.
	maxFiles := 60
	if c.recoverable {
		budget := 72*time.Minute - 30*time.Minute - 2*c.stallAfter
		maxFiles = min(60, max(0, int(budget*time.Duration(c.workers)/(2*jt)*10/16)))
	}
	files := rapid.IntRange(0, maxFiles).Draw(t, "files")
	over := map[string]sim.FileSpec{}
	if files > 0 {
		nover := rapid.IntRange(0, min(files, 8)).Draw(t, "overrides")
		poisons, stalls, forever := 0, 0, 0
		for i := 0; i < nover; i++ {
			key := sim.FileKey(rapid.IntRange(0, files-1).Draw(t, "overrideFile"))
			var fs sim.FileSpec
			switch rapid.IntRange(0, 6).Draw(t, "overrideKind") {
			case 0:
				fs.Poison = true
				poisons++
			case 1:
				fs.Stall = true
				stalls++
			case 2:
				fs.Error = "permanent"
				fs.FailTimes = rapid.IntRange(0, 3).Draw(t, "failTimes")
			case 3:
				fs.Error = "transient"
				fs.FailTimes = rapid.IntRange(0, 3).Draw(t, "failTimes")
			case 4:
				fs.Error = "service_down"
				fs.FailTimes = rapid.IntRange(0, 3).Draw(t, "failTimes")
				if fs.FailTimes == 0 {
					forever++
				}
			case 5:
				d := dur(secs(t, 1, 90, "fileJobTime"))
				fs.JobTime = &d
			case 6:
				fs.Error = "missing"
				fs.FailTimes = rapid.IntRange(0, 3).Draw(t, "failTimes")
			}
			// Recoverable mode keeps the deaths that poison and stall
			// files cause (two each, before quarantine) well below the
			// restart window, and few files that never finish.
			if c.recoverable && ((fs.Poison && poisons > 2) || (fs.Stall && stalls > 1) || (fs.Error == "service_down" && fs.FailTimes == 0 && forever > 2)) {
				continue
			}
			over[key] = fs
		}
	}
	lib := sim.Library{Files: files, JobTime: dur(jt)}
	if len(over) > 0 {
		lib.Overrides = over
	}
	c.sc = &sim.Scenario{Name: "property", Seed: c.seed, Config: cfg, Instances: insts, Library: lib}
	c.need = tailNeed(c)

	// Duration and fault horizon.
	var d time.Duration
	if c.recoverable {
		d = max(20*time.Minute, (c.need*10/6+time.Minute-1)/time.Minute*time.Minute)
		d = min(d, 2*time.Hour)
		c.horizon = d * 4 / 10
	} else {
		d = secs(t, 20*60, 2*3600, "duration")
		c.horizon = d / 2
	}
	c.sc.Duration = dur(d)
	c.sc.Faults = genFaults(t, c, insts, d)
	return c
}

// genFaults draws a fault schedule whose effects all end by c.horizon,
// except a graceful stop near the end of the run.
func genFaults(t *rapid.T, c *genCase, insts []string, d time.Duration) []sim.Fault {
	h := c.horizon
	n := rapid.IntRange(0, 10).Draw(t, "faults")
	maxKind := kReset
	if !c.recoverable {
		maxKind = nKinds - 1
	} else if len(insts) == 2 {
		// With two instances, one main process may die for good: the
		// other carries on.
		maxKind = kKillInstance
	}
	var fs []sim.Fault
	at := func(label string) time.Duration {
		return time.Duration(rapid.Int64Range(0, int64(h/time.Second)-1).Draw(t, label)) * time.Second
	}
	// span draws a start and a length that ends by the horizon.
	span := func(maxFor time.Duration) (time.Duration, time.Duration) {
		a := at("at")
		f := secs(t, 1, int(maxFor/time.Second), "for")
		if a+f > h {
			a = max(0, h-f)
		}
		return a, f
	}
	inst := func() string {
		if len(insts) == 1 {
			return ""
		}
		return rapid.SampledFrom(insts).Draw(t, "instance")
	}
	worker := func() string { return comp(rapid.IntRange(0, c.workers-1).Draw(t, "component")) }
	oneInst := ""
	if len(insts) == 2 {
		oneInst = rapid.SampledFrom(insts).Draw(t, "mortalInstance")
	}
	crashes := 0
	for i := 0; i < n; i++ {
		kind := rapid.IntRange(0, maxKind).Draw(t, "kind")
		switch kind {
		case kCrash, kHang:
			if c.recoverable {
				// At most three injected deaths per case, so that with
				// poison and stall files no worker reaches the restart
				// window (5 in 5 min) in recoverable mode.
				if crashes == 3 {
					continue
				}
				crashes++
			}
			f := sim.Fault{At: dur(at("at")), Instance: inst()}
			if kind == kCrash {
				f.Crash = worker()
			} else {
				f.Hang = worker()
				f.HoldsLock = rapid.Bool().Draw(t, "holdsLock") // stopped inside a write transaction
			}
			fs = append(fs, f)
		case kGPU:
			a, f := span(3 * time.Minute)
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), GPU: "down"})
		case kStoreDown, kStoreSlow:
			a, f := span(2 * time.Minute)
			mode := "down"
			if kind == kStoreSlow {
				mode = "slow"
			}
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), Store: mode})
		case kErrorRate:
			a, f := span(3 * time.Minute)
			p := float64(rapid.IntRange(1, 50).Draw(t, "errorRatePct")) / 100
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), ErrorRate: p})
		case kPauseResume:
			a, f := span(5 * time.Minute)
			in := inst()
			fs = append(fs, sim.Fault{At: dur(a), Pause: true, Instance: in}, sim.Fault{At: dur(a + f), Resume: true, Instance: in})
		case kRestartMain:
			a, f := span(30 * time.Second)
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), RestartMain: true, Instance: inst()})
		case kInject:
			fs = append(fs, sim.Fault{At: dur(at("at")), Instance: inst(), Inject: worker(), Frame: rapid.SampledFrom(frameKinds).Draw(t, "frame")})
		case kPartition:
			a, f := span(2 * time.Minute)
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), Partition: true, Instance: inst()})
		case kLostReplies:
			a, f := span(5 * time.Minute)
			p := float64(rapid.IntRange(1, 50).Draw(t, "lostRepliesPct")) / 100
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), LostReplies: p})
		case kMainHang:
			a, f := span(2 * time.Minute)
			fs = append(fs, sim.Fault{At: dur(a), For: dur(f), Main: "hang", Instance: inst()})
		case kReset:
			fs = append(fs, sim.Fault{At: dur(at("at")), Instance: inst(), Reset: worker()})
		case kMainDie, kKillInstance:
			in := oneInst
			if !c.recoverable {
				in = inst()
			}
			f := sim.Fault{At: dur(at("at")), Instance: in}
			if kind == kMainDie {
				f.Main = "die"
			} else {
				f.KillInstance = true
			}
			fs = append(fs, f)
		case kPauseOnly:
			fs = append(fs, sim.Fault{At: dur(at("at")), Pause: true, Instance: inst()})
		}
	}
	if !c.recoverable && rapid.IntRange(0, 3).Draw(t, "stop") == 0 {
		a := d*8/10 + time.Duration(rapid.Int64Range(0, int64(d/5/time.Second)-1).Draw(t, "stopAt"))*time.Second
		fs = append(fs, sim.Fault{At: dur(a), Stop: true, Instance: inst()})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// ---------------------------------------------------------------------------
// What the library legitimately cannot finish

// expectTagged reports whether a file must end tagged when the system is
// given a long enough fault-free tail, and why not otherwise. These are
// exactly the outcomes docs/design.md §7/§8 make final:
//   - poison: crashes its worker on every attempt; quarantined after
//     quarantine_after (2) crashes.
//   - stall: never finishes; killed after stall_after, twice, quarantined.
//   - permanent error (whatever fail_times): the first attempt fails the
//     file for good.
//   - missing (whatever fail_times): the first attempt marks the file
//     missing; only a scan, which the simulator does not run, brings it back.
//   - transient with fail_times 0 (always failing) or fail_times >=
//     transient_retries: failed after transient_retries attempts.
//   - service_down with fail_times 0: the dependency "never recovers" for
//     this file; it is released untouched and retried forever, never tagged.
//
// Files quarantined at run time (two injected crashes or hangs while a
// worker held them) are excluded by the caller.
func expectTagged(fs sim.FileSpec, transientRetries int) (bool, string) {
	switch {
	case fs.Poison:
		return false, "poison"
	case fs.Stall:
		return false, "stall"
	case fs.Error == "permanent":
		return false, "permanent error"
	case fs.Error == "missing":
		return false, "missing (not valid until a scan finds it again)"
	case fs.Error == "transient" && (fs.FailTimes == 0 || fs.FailTimes >= transientRetries):
		return false, "transient error on every allowed attempt"
	case fs.Error == "service_down" && fs.FailTimes == 0:
		return false, "service_down forever"
	}
	return true, ""
}

// tailNeed is how long a fault-free tail is enough to finish the library:
// 30 min of slack (restart backoffs ≤ 60 s, lease expiry of a dead
// instance's claims ≤ lease_ttl + cleanup period, breaker cool-downs, idle
// polls up to 30 s), plus twice the worker time of the library spread over
// one instance's workers (each attempt of a failing-then-succeeding file, a
// poison file's two half jobs, files that are retried forever stealing a
// share of each discovery batch), plus the stalls (two kills after
// stall_after each, serial on the stalled file) and the longest transient
// retry back-off chain (60 s·2^n, serial per file).
func tailNeed(c *genCase) time.Duration {
	lib := c.sc.Library
	var work, retryChain time.Duration
	stalls, forever := 0, 0
	for i := 0; i < lib.Files; i++ {
		key := sim.FileKey(i)
		fs, ok := lib.Overrides[key]
		jt := lib.JobTime.D()
		if ok && fs.JobTime != nil {
			jt = fs.JobTime.D()
		}
		switch {
		case !ok:
			work += jt
		case fs.Poison:
			work += jt
		case fs.Stall:
			stalls++
		case fs.Error == "service_down" && fs.FailTimes == 0:
			forever++
		case fs.Error != "":
			work += time.Duration(fs.FailTimes+1) * jt
			if fs.Error == "transient" {
				var chain time.Duration
				for n := 1; n <= fs.FailTimes; n++ {
					chain += min(time.Minute<<(n-1), 30*time.Minute)
				}
				retryChain = max(retryChain, chain)
			}
		default:
			work += jt
		}
	}
	// Files retried forever take `forever` of every discovery batch (8).
	work = work * 8 / time.Duration(max(1, 8-forever))
	return 30*time.Minute + 2*work/time.Duration(c.workers) + time.Duration(2*stalls)*c.stallAfter + retryChain
}

// ---------------------------------------------------------------------------
// When liveness is required

// span is a closed interval of simulated time.
type span struct{ from, to time.Duration }

func (s span) covers(t time.Duration) bool { return t >= s.from && t <= s.to }

// livenessPlan decides from the schedule alone whether the run must end
// with every taggable file tagged, and why not otherwise. Liveness is
// required when:
//   - no graceful stop is scheduled;
//   - at least one main process is alive at the end (a main death or a
//     killed instance is final unless a later restart_main revives it);
//   - the cluster-wide pause flag ends "enabled": the last pause is followed
//     by a resume that certainly took effect. A pause or resume issued
//     through a dead main process, or while the store is down, slow,
//     erroring or locked by a hung worker, may not be written (the operator would retry; the simulator
//     does not), so it makes the final flag uncertain;
//   - the fault-free tail (after the last fault effect) is at least
//     tailNeed.
func livenessPlan(c *genCase) (bool, string) {
	sc := c.sc
	type ev struct {
		at  time.Duration
		idx int
		f   *sim.Fault
	}
	evs := make([]ev, len(sc.Faults))
	for i := range sc.Faults {
		evs[i] = ev{sc.Faults[i].At.D(), i, &sc.Faults[i]}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	target := func(f *sim.Fault) string {
		if f.Instance == "" {
			return sc.Instances[0]
		}
		return f.Instance
	}
	// Dead intervals per instance, and the store-fault intervals.
	dead := map[string][]span{}
	alive := map[string]bool{}
	deadSince := map[string]time.Duration{}
	for _, in := range sc.Instances {
		alive[in] = true
	}
	var storeBad []span
	end := time.Duration(0)
	for _, e := range evs {
		f := e.f
		in := target(f)
		effectEnd := e.at
		switch {
		case f.Stop:
			return false, fmt.Sprintf("graceful stop at %s", e.at)
		case f.Main != "" || f.KillInstance:
			if alive[in] {
				alive[in], deadSince[in] = false, e.at
			}
		case f.RestartMain:
			delay := f.For.D()
			if delay <= 0 {
				delay = time.Second
			}
			from := e.at
			if !alive[in] {
				from = deadSince[in]
			}
			dead[in] = append(dead[in], span{from, e.at + delay})
			alive[in] = true
			effectEnd = e.at + delay
		case f.Store != "" || f.ErrorRate != 0 || f.LostReplies != 0 || f.Partition:
			storeBad = append(storeBad, span{e.at, e.at + f.For.D()})
			effectEnd = e.at + f.For.D()
		case f.GPU != "":
			effectEnd = e.at + f.For.D()
		case f.HoldsLock:
			// The store is locked until the hung worker is killed: by its
			// main process at hang_after after its last frame (startup_
			// timeout before its first), or sooner by a crash. A main
			// process that dies first leaves it hung, and the lock held.
			cfg, _ := sc.Settings()
			held := span{e.at, e.at + max(cfg.HangAfter, cfg.StartupTimeout) + cfg.FrameInterval + cfg.CheckInterval}
			if !alive[in] || slices.ContainsFunc(evs, func(d ev) bool {
				return (d.f.Main != "" || d.f.KillInstance || d.f.RestartMain) && target(d.f) == in && d.at >= e.at && d.at <= held.to
			}) {
				return false, fmt.Sprintf("a worker hung at %s holding the store's lock may outlive its main process", e.at)
			}
			storeBad = append(storeBad, held)
			effectEnd = held.to
		}
		end = max(end, effectEnd)
	}
	for in, ok := range alive {
		if !ok {
			dead[in] = append(dead[in], span{deadSince[in], sc.Duration.D()})
		}
	}
	if !slices.ContainsFunc(sc.Instances, func(in string) bool { return alive[in] }) {
		return false, "no main process alive at the end"
	}
	// The pause flag.
	const running, paused, unknown = 0, 1, 2
	state := running
	for _, e := range evs {
		f := e.f
		if !f.Pause && !f.Resume {
			continue
		}
		certain := !slices.ContainsFunc(storeBad, func(s span) bool { return s.covers(e.at) }) &&
			!slices.ContainsFunc(dead[target(f)], func(s span) bool { return s.covers(e.at) })
		switch {
		case f.Pause && certain:
			state = paused
		case f.Resume && certain:
			state = running
		case f.Pause && state == running:
			state = unknown
		case f.Resume && state != running:
			state = unknown
		}
	}
	if state != running {
		return false, "workers may be left paused (pause without a certain resume)"
	}
	if tail := sc.Duration.D() - end; tail < c.need {
		return false, fmt.Sprintf("fault-free tail %s shorter than the %s the library needs", tail, c.need)
	}
	return true, ""
}

// ---------------------------------------------------------------------------
// Running a case

// outcome is what one run produced, for the properties.
type outcome struct {
	w   *sim.World
	res *sim.Result
	// stuck: simulated time stopped advancing at this instant (ms), see
	// stuckGuard; res is nil then.
	stuck int64
}

// caseTimeout bounds one case's wall time: a run that never returns (a
// livelock that emits no events) crashes the test binary with the scenario
// instead of hanging until go test's own timeout.
const caseTimeout = 2 * time.Minute

// runCase runs one generated case. guard adds a stuckGuard in front of
// opt.Trace.
func runCase(c *genCase, opt sim.Options, guard bool) (o outcome) {
	opt.Seed = c.seed
	if guard {
		opt.Trace = &stuckGuard{out: opt.Trace}
	}
	w, err := sim.New(c.sc, opt)
	if err != nil {
		panic(fmt.Sprintf("generated scenario rejected: %v\n%s", err, scenarioYAML(c.sc)))
	}
	o.w = w
	watchdog := time.AfterFunc(caseTimeout, func() {
		panic(fmt.Sprintf("simulation did not return within %s (livelock?), seed %d:\n%s", caseTimeout, c.seed, scenarioYAML(c.sc)))
	})
	defer watchdog.Stop()
	if guard {
		defer func() {
			if r := recover(); r != nil {
				st, ok := r.(errStuck)
				if !ok {
					panic(r)
				}
				o.res, o.stuck = nil, int64(st)
			}
		}()
	}
	o.res = w.Run()
	return o
}

// errStuck is the stuckGuard's panic value: the instant (ms) time froze at.
type errStuck int64

// stuckGuard is a trace writer that notices when simulated time stops
// advancing: more than stuckLimit consecutive trace lines at the same
// instant. It is the only hook into a running World; it costs the JSON
// encoding of every event, so the properties run without it (runCase's
// watchdog still bounds them); TestRegressions and the determinism tests
// use it.
type stuckGuard struct {
	out  io.Writer
	last int64
	same int
}

const stuckLimit = 20_000

func (g *stuckGuard) Write(b []byte) (int, error) {
	// Lines start with {"t_ms":N,
	var t int64
	if len(b) > len(`{"t_ms":`) {
		for _, ch := range b[len(`{"t_ms":`):] {
			if ch < '0' || ch > '9' {
				break
			}
			t = t*10 + int64(ch-'0')
		}
	}
	if t == g.last {
		g.same++
		if g.same > stuckLimit {
			panic(errStuck(t))
		}
	} else {
		g.last, g.same = t, 0
	}
	if g.out != nil {
		return g.out.Write(b)
	}
	return len(b), nil
}

// failedEverywhere reports whether every worker of every live main process
// is failed, listing the failed ones.
func failedEverywhere(w *sim.World) (bool, []string) {
	var failed []string
	all, some := true, false
	for _, in := range w.Instances {
		if !in.Alive() {
			continue
		}
		some = true
		for _, id := range in.Node().Sup.Components() {
			if in.Node().Sup.Status(id, w.Now()) == "failed" {
				failed = append(failed, in.ID+"/"+id)
			} else {
				all = false
			}
		}
	}
	return some && all, failed
}

// checkLiveness returns the taggable files left untagged (with their store
// state), or "" when the library is finished.
func checkLiveness(c *genCase, o outcome) string {
	var b strings.Builder
	st := o.w.Store
	for i := 0; i < c.sc.Library.Files; i++ {
		key := sim.FileKey(i)
		if ok, _ := expectTagged(c.sc.Library.Overrides[key], c.transientMax); !ok {
			continue
		}
		f, _ := st.Peek(key)
		if f.Tagged {
			continue
		}
		if f.Failed && f.LastError == supervisor.QuarantineReason(o.w.Config().QuarantineAfter) {
			// Quarantined: quarantine_after counted deaths of workers
			// holding it (injected crashes, hangs); the safety checker
			// verifies each quarantine against its own crash model.
			continue
		}
		cl, held := st.ClaimOf(key)
		retry := "-"
		if !f.NextRetryAt.IsZero() {
			retry = f.NextRetryAt.Sub(sim.Epoch).String()
		}
		fmt.Fprintf(&b, "  %s: tagged=%v failed=%v last_error=%q attempts=%d crash_count=%d next_retry_at=%s claimed=%v",
			key, f.Tagged, f.Failed, f.LastError, f.Attempts, f.CrashCount, retry, held)
		if held {
			fmt.Fprintf(&b, " by %s lease_until=%s", cl.WorkerID, cl.LeaseUntil.Sub(sim.Epoch))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// report describes a failing case: the YAML reproducer, the seed, the end
// state and the violations.
func report(c *genCase, o outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reproduce: save as x.yaml, run `nomarr sim x.yaml --seed %d` (or sim.Run(sc, sim.Options{Check: true, Seed: %d}))\n", c.seed, c.seed)
	b.WriteString(scenarioYAML(c.sc))
	if o.res != nil {
		o.res.WriteSummary(&b)
		for _, in := range o.w.Instances {
			fmt.Fprintf(&b, "  instance %s alive=%v\n", in.ID, in.Alive())
			for _, id := range in.Node().Sup.Components() {
				info, _ := in.Node().Sup.Info(id)
				fmt.Fprintf(&b, "    %s: status=%s phase=%s job=%q running=%v restart_pending=%v failed=%v reason=%q restarts=%d\n",
					id, in.Node().Sup.Status(id, o.w.Now()), info.Phase, info.CurrentJob, info.Running, info.RestartPending,
					info.Failed, info.Policy.FailureReason, info.Policy.RestartCount)
			}
		}
	}
	return b.String()
}

// scenarioYAML writes a scenario in the scenarios/ file format, with only
// the fields that are set.
func scenarioYAML(sc *sim.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nseed: %d\nduration: %s\n", sc.Name, sc.Seed, sc.Duration.D())
	if len(sc.Config) > 0 {
		keys := make([]string, 0, len(sc.Config))
		for k := range sc.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s: %v", k, sc.Config[k])
		}
		fmt.Fprintf(&b, "config: {%s}\n", strings.Join(parts, ", "))
	}
	if len(sc.Instances) > 0 {
		fmt.Fprintf(&b, "instances: [%s]\n", strings.Join(sc.Instances, ", "))
	}
	fmt.Fprintf(&b, "library:\n  files: %d\n", sc.Library.Files)
	if sc.Library.JobTime != 0 {
		fmt.Fprintf(&b, "  job_time: %s\n", sc.Library.JobTime.D())
	}
	if len(sc.Library.Overrides) > 0 {
		b.WriteString("  overrides:\n")
		keys := make([]string, 0, len(sc.Library.Overrides))
		for k := range sc.Library.Overrides {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o := sc.Library.Overrides[k]
			var parts []string
			if o.JobTime != nil {
				parts = append(parts, "job_time: "+o.JobTime.D().String())
			}
			if o.Poison {
				parts = append(parts, "poison: true")
			}
			if o.Stall {
				parts = append(parts, "stall: true")
			}
			if o.Error != "" {
				parts = append(parts, "error: "+o.Error, fmt.Sprintf("fail_times: %d", o.FailTimes))
			}
			fmt.Fprintf(&b, "    %s: {%s}\n", k, strings.Join(parts, ", "))
		}
	}
	if len(sc.Faults) > 0 {
		b.WriteString("faults:\n")
		for _, f := range sc.Faults {
			parts := []string{"at: " + f.At.D().String()}
			add := func(cond bool, s string) {
				if cond {
					parts = append(parts, s)
				}
			}
			add(f.Instance != "", "instance: "+f.Instance)
			add(f.Crash != "", fmt.Sprintf("crash: %q", f.Crash))
			add(f.Hang != "", fmt.Sprintf("hang: %q", f.Hang))
			add(f.HoldsLock, "holds_lock: true")
			add(f.GPU != "", "gpu: "+f.GPU)
			add(f.Store != "", "store: "+f.Store)
			add(f.ErrorRate != 0, fmt.Sprintf("error_rate: %g", f.ErrorRate))
			add(f.LostReplies != 0, fmt.Sprintf("lost_replies: %g", f.LostReplies))
			add(f.Partition, "partition: true")
			add(f.Main != "", "main: "+f.Main)
			add(f.KillInstance, "kill_instance: true")
			add(f.RestartMain, "restart_main: true")
			add(f.Stop, "stop: true")
			add(f.ForceStop, "force_stop: true")
			add(f.Pause, "pause: true")
			add(f.Resume, "resume: true")
			add(f.Reset != "", fmt.Sprintf("reset: %q", f.Reset))
			add(f.Inject != "", fmt.Sprintf("inject: %q", f.Inject))
			add(f.Frame != "", "frame: "+f.Frame)
			add(f.For != 0, "for: "+f.For.D().String())
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(parts, ", "))
		}
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Regressions
//
// The minimal reproducer of every bug these properties found, kept as a
// plain regression case: TestRegressions runs each with the safety checker
// and requires no violation and a run that reaches its end.

var regressions = []struct{ id, why, yaml string }{
	{
		id: "restart-deadline-livelock",
		why: "(fixed in dbed1bb) core/supervisor: Deadline() returned a restart time that is already past while the dead worker's " +
			"claims cannot be released (store down/slow), so Node.NextWake() is in the past and the driver ticks at " +
			"the same instant forever (simulated time froze; sim.Run never returned; in production a busy loop " +
			"hammering the store)",
		yaml: `name: restart-deadline-livelock
seed: 1
duration: 2m
config: {workers: 1}
library: {files: 3, job_time: 20s}
faults:
  - {at: 10s, store: down, for: 30s}
  - {at: 12s, crash: "worker:discovery:0"}
`,
	},
	{
		id: "restart-main-overlap-orphan",
		why: "sim/faults.go: a restart_main while an earlier restart_main of the same instance is still pending " +
			"started two new main processes with the same instance id (a:2); the second was not in World.Instances, so " +
			"it was never ticked again, yet its workers ran, claimed and tagged under the same worker ids as the real one's",
		yaml: `name: restart-main-overlap-orphan
seed: 1
duration: 2m
config: {workers: 1}
library: {files: 10, job_time: 20s}
faults:
  - {at: 10s, restart_main: true, for: 5s}
  - {at: 12s, restart_main: true, for: 5s}
`,
	},
	{
		id: "checker-claims-no-live-owner",
		why: "sim/check.go: \"a dead worker's claims are released within lease_ttl + cleanup period\" was also " +
			"enforced while no main process is alive (nobody can release or clean up), and right after a main " +
			"process restart (the new node's first cleanup runs one cleanup period after it starts): false positives",
		yaml: `name: checker-claims-no-live-owner
seed: 1
duration: 5m
config: {workers: 1}
library: {files: 1, job_time: 20s}
faults:
  - {at: 5s, kill_instance: true}
  - {at: 3m, gpu: down, for: 1s}
`,
	},
	{
		id: "checker-unpersisted-failed",
		why: "sim/check.go: \"failed until reset\" was carried across main-process restarts even when the failure " +
			"could not be persisted (store down when the worker was declared failed, main restarted before the " +
			"store came back): the new main loads the last persisted state, which is not failed, and spawns the " +
			"worker. No implementation can know better; the checker resyncs its per-node restart model from the " +
			"persisted state (Store.RestartState) when a new main process starts",
		yaml: `name: checker-unpersisted-failed
seed: 1
duration: 2m
config: {workers: 1, window_limit: 1}
library: {files: 10, job_time: 20s}
faults:
  - {at: 5s, crash: "worker:discovery:0"}
  - {at: 8s, store: down, for: 10s}
  - {at: 10s, crash: "worker:discovery:0"}
  - {at: 12s, restart_main: true, for: 1s}
`,
	},
	{
		id: "checker-unpersisted-backoff",
		why: "sim/check.go: the checker's backoff sequence (and restart window) per node was carried across " +
			"main-process restarts even when the death that advanced it could not be persisted (store down): the " +
			"new main resumes from the last persisted state (Consecutive one lower), so its next backoff was " +
			"reported as a violation (\"backoff 5000 ms, want 10000 ms\"). Same fix as checker-unpersisted-failed",
		yaml: `name: checker-unpersisted-backoff
seed: 1
duration: 4m
config: {workers: 1, backoff_base: 5s}
library: {files: 20, job_time: 10s}
faults:
  - {at: 7s, store: down, for: 55s}
  - {at: 14s, crash: "worker:discovery:0"}
  - {at: 18s, restart_main: true, for: 1s}
  - {at: 2m, crash: "worker:discovery:0"}
`,
	},
	{
		id: "lease-grace-after-lock-wait",
		why: "core/node: the cleanup's grace after a store failure counted from the failing call's turn start. b's " +
			"release and restart-state write waited on a lock held by a's hung worker from 2 s to its kill at 31 s, " +
			"stamped 12 s; at 31 s b's cleanup took the grace (lease_ttl 10 s) as over and expired a's lease " +
			"that no one could renew meanwhile, and a's restarted worker claimed the file beside the worker still " +
			"on it. Now a failure counts until the next tick begins",
		yaml: `name: lease-grace-after-lock-wait
seed: 1
duration: 3m
config: {lease_ttl: 10s, workers: 2}
instances: [a, b]
library:
  files: 7
  job_time: 1m1s
faults:
  - {at: 1s, instance: a, hang: "worker:discovery:0", holds_lock: true}
  - {at: 2s, instance: b, crash: "worker:discovery:1"}
`,
	},
	{
		id: "main-hang-lock-lapsed-orphan",
		why: "core/node: a's main process died at 3 s; its orphaned worker renewed its own lease until b's hung " +
			"worker took the store's lock at 40 s. b's main process, stopped from 11 s to 77 s, never met the lock, " +
			"so on resuming its cleanup expired a's lease at once, and b's restarted worker claimed the file while " +
			"a's worker still held its job. A stall now counts as a store failure for the cleanup's grace",
		yaml: `name: main-hang-lock-lapsed-orphan
seed: 1
duration: 1h1m
config: {frame_interval: 1s, hang_after: 3s, lease_ttl: 10s, stale_after: 2s, stall_after: 1m, workers: 1}
instances: [a, b]
library:
  files: 4
  job_time: 38s
  overrides:
    f0001: {error: permanent, fail_times: 1}
faults:
  - {at: 0s, instance: b, hang: "worker:discovery:0"}
  - {at: 1s, instance: a, pause: true}
  - {at: 2s, instance: a, resume: true}
  - {at: 3s, instance: a, main: die}
  - {at: 11s, instance: b, main: hang, for: 1m6s}
  - {at: 40s, instance: b, hang: "worker:discovery:0", holds_lock: true}
  - {at: 1m17s, instance: b, crash: "worker:discovery:0"}
`,
	},
	{
		id: "dead-claims-after-main-restarts",
		why: "sim/check.go: a's worker died with its main process at 2 s holding a claim whose lease ran to 31 s; " +
			"b's main process, up since 0 s, died at 35 s, before its cleanup at 60 s. The main processes up then " +
			"(a:2 from 34 s, b:2 from 36 s) run their first cleanup a period after they start, and a:2 released " +
			"the claim at 64 s. The checker counted a main process as there since 0 s (some main process was " +
			"always up) and wanted the claim gone by 63 s; it now counts from the start of the one up the longest",
		yaml: `name: dead-claims-after-main-restarts
seed: 1
duration: 20m
config: {workers: 1}
instances: [a, b]
library:
  files: 2
  job_time: 1s
faults:
  - {at: 0s, instance: a, crash: "worker:discovery:0"}
  - {at: 0s, instance: a, crash: "worker:discovery:0"}
  - {at: 0s, gpu: down, for: 1s}
  - {at: 2s, instance: a, kill_instance: true}
  - {at: 27s, instance: a, restart_main: true, for: 7s}
  - {at: 35s, instance: b, restart_main: true, for: 1s}
`,
	},
	{
		id: "main-hang-healthy-reset",
		why: "core/supervisor: the worker's healthy run began at a tick at 7 s, and the main process was stopped " +
			"from 7 s to 9 s before its monitor reported the health; the backoff reset came at 307 s, 298 s after " +
			"the health was seen. Discount now moves the healthy run's start too: health the main process did not " +
			"see is not counted toward healthy_reset",
		yaml: `name: main-hang-healthy-reset
seed: 1
duration: 20m
config: {frame_interval: 1s, hang_after: 3s, lease_ttl: 10s, stale_after: 2s, stall_after: 1m, workers: 1}
instances: [a]
library:
  files: 2
  job_time: 1s
  overrides:
    f0000: {error: permanent, fail_times: 0}
faults:
  - {at: 0s, crash: "worker:discovery:0"}
  - {at: 2s, crash: "worker:discovery:0"}
  - {at: 7s, main: hang, for: 2s}
  - {at: 16m, stop: true}
`,
	},
	{
		id: "held-loop-healthy-reset",
		why: "sim/check.go: a's owner saw worker 0 healthy at a tick at 252.3 s, when its monitor's check was not " +
			"due yet; that tick's store calls then waited 10 s on the lock of a hung worker, so the check due at " +
			"253 s came at 262.3 s. The backoff reset at 553.1 s was right, but the checker counted the health " +
			"from 262.3 s less one check interval; it now counts from the check before the one that saw it",
		yaml: `name: held-loop-healthy-reset
seed: 1
duration: 20m
config: {lease_ttl: 13s, stall_after: 1m, workers: 3}
instances: [a, b]
library:
  files: 29
  job_time: 1s
  overrides:
    f0000: {error: permanent, fail_times: 0}
faults:
  - {at: 1s, instance: b, pause: true}
  - {at: 1s, instance: a, crash: "worker:discovery:0"}
  - {at: 2s, instance: b, resume: true}
  - {at: 2m49s, store: slow, for: 1m10s}
  - {at: 4m8s, instance: a, hang: "worker:discovery:1", holds_lock: true}
  - {at: 4m18s, store: down, for: 9s}
`,
	},
	{
		id: "main-hang-lapsed-leases",
		why: "sim/check.go: b's main process stopped for 61 s, so nothing renewed its workers' leases; a's cleanup " +
			"expired b's claim at 60 s while b's worker, discounted rather than killed as hung, stayed on the " +
			"(stalled) job, and b's other worker claimed it at 75 s. A stopped main process cannot be told from a " +
			"dead one: the checker now treats it as a host cut off (and as no main process there to release claims)",
		yaml: `name: main-hang-lapsed-leases
seed: 1
duration: 20m
config: {workers: 2}
instances: [a, b]
library:
  files: 3
  job_time: 1s
  overrides:
    f0002: {stall: true}
faults:
  - {at: 0s, instance: b, main: hang, for: 1m1s}
  - {at: 16m0s, instance: a, stop: true}
`,
	},
	{
		id: "main-hang-orphan-claims",
		why: "sim/check.go: a's main process and worker died at 1 s, b's main process was stopped from 26 s to 66 s: " +
			"no main process was there to release a's claims, which the checker required by 62 s",
		yaml: `name: main-hang-orphan-claims
seed: 1
duration: 5m
config: {workers: 1}
instances: [a, b]
library:
  files: 1
  job_time: 1s
faults:
  - {at: 1s, instance: a, main: die}
  - {at: 1s, instance: a, crash: "worker:discovery:0"}
  - {at: 26s, instance: b, main: hang, for: 40s}
`,
	},
	{
		id: "restart-held-by-its-state-write",
		why: "core/supervisor: a restart waiting for its restart state to be written was still reported as due (Deadline), " +
			"so with the store down at the restart's time the loop retried the write a million times at 26.5 s",
		yaml: `name: restart-held-by-its-state-write
seed: 185892
duration: 5m
config: {frame_interval: 3s, gpu: true, hang_after: 43s, lease_ttl: 20s, stale_after: 7s, stall_after: 5m0s, workers: 1}
instances: [a, b]
library:
  files: 9
  job_time: 2s
  overrides:
    f0001: {stall: true}
    f0008: {poison: true}
faults:
  - {at: 1s, error_rate: 0.23, for: 38s}
  - {at: 1s, instance: b, inject: "worker:discovery:0", frame: bad_json}
  - {at: 20s, gpu: down, for: 1m1s}
  - {at: 26s, store: down, for: 3s}
`,
	},
}

// TestRegressions replays every regression reproducer with the safety
// checker (the equivalent of sim.Run(sc, sim.Options{Check: true}), behind
// runCase's watchdog and a stuckGuard, so a frozen clock fails instead of
// hanging) and requires no violation and a run that reaches its end.
func TestRegressions(t *testing.T) {
	for _, r := range regressions {
		t.Run(r.id, func(t *testing.T) {
			sc, err := sim.Parse([]byte(r.yaml))
			if err != nil {
				t.Fatalf("reproducer: %v", err)
			}
			o := runCase(&genCase{sc: sc, seed: sc.Seed}, sim.Options{Check: true}, true)
			if o.res == nil {
				t.Fatalf("simulated time froze at %d ms\nbug: %s\nreproducer:\n%s", o.stuck, r.why, r.yaml)
			}
			if len(o.res.Violations) > 0 {
				t.Fatalf("violations: %v\nbug: %s\nreproducer:\n%s", o.res.Violations, r.why, r.yaml)
			}
			if want := sc.Duration.D(); o.w.Now().Sub(sim.Epoch) != o.res.Simulated || o.res.Simulated != want {
				t.Fatalf("run ended at %s, want %s\nbug: %s\nreproducer:\n%s", o.res.Simulated, want, r.why, r.yaml)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// The properties

// verdict is the judgement of one case.
type verdict struct {
	fail        string // the property failed: why, with a reproducer
	live        bool   // liveness was checked
	notRequired string // why liveness was not required
	allFailed   bool   // liveness skipped: every worker failed
	someFailed  bool
}

// evaluate runs one case and judges safety and liveness.
func evaluate(c *genCase) (verdict, outcome) {
	var v verdict
	o := runCase(c, sim.Options{Check: true, NoRetain: true}, false)
	// Safety: the checker found nothing.
	if len(o.res.Violations) > 0 {
		v.fail = fmt.Sprintf("safety violations:\n  %s\n%s", strings.Join(o.res.Violations, "\n  "), report(c, o))
		return v, o
	}
	// Liveness.
	ok, why := livenessPlan(c)
	all, failed := failedEverywhere(o.w)
	v.someFailed = len(failed) > 0
	switch {
	case !ok:
		v.notRequired = why
		return v, o
	case all:
		// Crash-loop limits legitimately fail workers (poison and stall
		// deaths count toward a worker's restart window).
		v.allFailed = true
		v.notRequired = fmt.Sprintf("every worker failed: %v", failed)
		return v, o
	}
	v.live = true
	if missing := checkLiveness(c, o); missing != "" {
		v.fail = fmt.Sprintf("liveness: taggable files left untagged after a %s fault-free tail (failed workers: %v):\n%s%s",
			c.sc.Duration.D()-c.horizon, failed, missing, report(c, o))
	}
	return v, o
}

// propertyStats counts what the property runs covered.
type propertyStats struct {
	mu                                     sync.Mutex
	cases, live, allFailed, someFailed, nr int
}

func (s *propertyStats) add(v verdict) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cases++
	if v.live {
		s.live++
	}
	if v.allFailed {
		s.allFailed++
	}
	if v.someFailed {
		s.someFailed++
	}
	if v.notRequired != "" {
		s.nr++
	}
}

func (s *propertyStats) log(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("%d cases: liveness checked in %d, not required in %d (every worker failed in %d); some worker failed in %d",
		s.cases, s.live, s.nr, s.allFailed, s.someFailed)
}

func property(stats *propertyStats, recoverable bool) func(*rapid.T) {
	gen := genScenarioMode(recoverable)
	return func(t *rapid.T) {
		c := gen.Draw(t, "case")
		v, _ := evaluate(c)
		stats.add(v)
		if v.fail != "" {
			t.Fatal(v.fail)
		}
		if v.notRequired != "" {
			t.Logf("liveness not required: %s", v.notRequired)
		}
	}
}

// TestPropertySim runs the two properties in parallel (CI has two cores):
// recoverable schedules (safety + liveness) and arbitrary ones (safety; and
// liveness where the schedule still allows it).
func TestPropertySim(t *testing.T) {
	rapidflags.Set(t, defaultChecks, 0, rapidflags.Seed)
	for _, recoverable := range []bool{true, false} {
		name := "recoverable"
		if !recoverable {
			name = "arbitrary"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stats propertyStats
			start := time.Now()
			rapid.Check(t, property(&stats, recoverable))
			stats.log(t)
			t.Logf("took %s", time.Since(start).Round(time.Millisecond))
			if recoverable && !t.Failed() && stats.live*2 < stats.cases {
				t.Errorf("liveness was checked in only %d of %d recoverable cases: the generator drifted", stats.live, stats.cases)
			}
		})
	}
}
