package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// checker verifies the safety properties after every event. It is a test
// oracle: it watches the trace and the world, and never feeds anything back.
// It keeps its own model of what the trace implies (who holds and who works
// on each file, how many restarts each component had, how long it has been
// healthy) instead of trusting the numbers the core reports, and it encodes
// the configured limits of docs/design.md §4–§8 itself rather than calling the core's
// policy functions.
//
// Invariants checked:
//
//   - A file is never claimed while another worker's claim on it is live
//     (per the trace), and never tagged or completed twice.
//   - Two workers never analyse one file at once: a worker works on a file
//     from its claim until its own tagged/release/file_failed/file_retry for
//     it or the end of its process, whether or not its lease expired
//     meanwhile; another worker's claim of the file in that time, while the
//     first process is alive, not stopped and still on the job (running
//     it, or loading the models for it, per the simulator's own state of
//     the process: onFile), is a violation — unless the claim was taken by a cleanup (lease_expired)
//     while the first worker's host was cut off from the store (a
//     partition) or its main process was stopped (`main: hang`: nothing
//     renews its workers' leases), or within lease_ttl after it got back
//     (before its owner's next renewal): such a host cannot be told from a
//     dead one.
//   - Tags are written into a file only by the worker that holds its claim
//     in the store at that moment (the fake analyzer reports each write),
//     whatever partitions, outages and main deaths came before.
//   - No restart is scheduled while stopping or for a failed component;
//     failed components are not spawned without a reset; each restart
//     consumes the one restart timer pending for its component (a stop
//     cancels them), and comes no earlier than its death plus its backoff
//     (check_restart.go).
//   - Every backoff is min(backoff_base·2^n, backoff_max), n counting the
//     restarts since the last backoff reset, and a backoff reset comes only
//     after healthy_reset of continuous healthy status, as the monitor's
//     status events report it, counted from the check before the one that
//     saw it (the owner may see health begin at any tick after that check:
//     normally within one check interval of the check that reports it, and
//     earlier when a loop held up in a store call makes that check late),
//     less the time the main process was stopped meanwhile.
//   - At most window_limit restarts within window, and at most
//     lifetime_limit restarts between lifetime resets, counted by the
//     checker: the count is cleared only by a manual reset or after
//     lifetime_reset of continuous healthy status (counted alike).
//   - The restart state a new main process finds in the store matches the
//     checker's model of the earlier ones' decisions, unless a save of it
//     failed meanwhile (checkPersisted).
//   - A dead worker's released file counts a crash unless the death came
//     during a stop, and is quarantined in that release exactly when its
//     count reaches quarantine_after (check_crash.go); a release whose
//     answer was lost is reported all the same — its `release` and
//     `quarantined` events — once the owner's retry is answered.
//   - No claim is made while worker_enabled reads false, nor by a worker
//     that has learnt of its main process's death (check_claims.go).
//   - A worker that frames and makes progress is never killed; an orphan
//     (its main process dead) never exits mid-job unless its job really
//     stalled for stall_after.
//   - A worker exits 0 only when its main process stops or is dead
//     (check_exit.go).
//   - The claims of a live worker not being killed, of a main process
//     alive and not stopped, keep lease_until − now ≥ lease_ttl −
//     lease_ttl/3 − check_interval (renewed every lease_ttl/3), but within
//     check_interval of a fault or of the end of a stop (check_lease.go).
//   - Eligible work is claimed within idle_poll_max while a worker sits
//     idle, the cluster is enabled and no fault comes (check_progress.go).
//   - No worker shows idle more than 2 s after a pause, unless a fault
//     came since (check_pause.go).
//   - A dead worker's claims are gone within check_interval of its owner's
//     `exit` event, unless a store fault, a partition, a held lock or the
//     owner's death or stop since may have held the release
//     (check_release.go); and in any case within lease_ttl + cleanup period
//     (+ one check interval) of the latest of its death, a main process
//     being up to do it (counted from the start, or the end of the last
//     stop, of the one up the longest), and the store's last recovery.
type checker struct {
	w          *World
	violations []string

	holder    map[string]string    // file → worker holding its claim, per the trace
	analysing map[string]string    // file → worker running a job on it, per the trace
	lastClaim map[string]string    // worker → the file of its last claim event (cleared at its process's exit)
	cutOff    map[string]bool      // file → its claim expired while its holder's host was cut off (or just back)
	healedAt  map[string]time.Time // host → the end of its last partition
	tagged    map[string]int
	failed    map[string]bool // <instance-name>/<component> failed and not reset
	stopping  map[string]bool // instance id → stop requested
	lastBack  map[string]int64
	restarts  map[string][]int64 // restart_scheduled times per node/component
	lifetime  map[string]int     // restarts per node/component since its last reset
	health    map[string]*healthRun
	mainDied  map[string]time.Time // instance id → main death
	deaths    []death
	seen      map[string]bool // instance ids seen in the trace

	storeFaults int64                   // injected store failures seen so far
	lostReplies int64                   // store answers lost so far (lostreply.go)
	storeDown   bool                    // the store was down (or slow) after the last event
	faultAt     time.Time               // last time the store was seen failing, or its recovery
	upSince     map[*Instance]time.Time // main process → since when it has been alive and not stopped
	stops       map[string][]span       // instance id → its main process's stops (main: hang), in order
	mainUpAt    time.Time               // the earliest upSince of the main processes up now

	crash        crashModel           // crash counts and quarantines (check_crash.go)
	restartDue   map[string]time.Time // instance id/component → when its scheduled restart is due (check_restart.go)
	unsaved      map[string]bool      // node/component → a save of its restart state failed since its last resync (check_restart.go)
	live         map[string]bool      // instance id/component → spawned, and its exit not reported yet
	exits        []ownerExit          // deaths the owner saw whose claims must go at once (check_release.go)
	killed       map[string]bool      // instance id/component → killed by its owner, not yet exited or spawned again (check_lease.go)
	leaseFlagged map[store.Claim]bool // claims (with their lease) already flagged for a lease fallen behind (check_lease.go)
	progress     progressWatch        // eligible work waiting for an idle worker (check_progress.go)
	pause        pauseWatch           // idle workers after a pause (check_pause.go)
	leaseSampled time.Time            // the instant of the last lease sample (check_lease.go)
}

// span is one stop of a main process, from its start to its end.
type span struct{ from, to time.Time }

type death struct {
	workerID string
	at       time.Time
}

// healthRun is one component's health as a main process's monitor reports
// it (status events), keyed by <instance id>/<component>.
type healthRun struct {
	healthy bool      // the last status event said healthy
	down    bool      // the process died and no new one was spawned yet
	since   time.Time // start of the current healthy run
}

func newChecker(w *World) *checker {
	return &checker{w: w, holder: map[string]string{}, analysing: map[string]string{}, lastClaim: map[string]string{}, cutOff: map[string]bool{}, healedAt: map[string]time.Time{}, tagged: map[string]int{},
		failed: map[string]bool{}, stopping: map[string]bool{}, lastBack: map[string]int64{}, restarts: map[string][]int64{},
		lifetime: map[string]int{}, health: map[string]*healthRun{}, mainDied: map[string]time.Time{}, seen: map[string]bool{},
		upSince: map[*Instance]time.Time{}, stops: map[string][]span{}, crash: newCrashModel(), restartDue: map[string]time.Time{}, unsaved: map[string]bool{}, live: map[string]bool{},
		killed: map[string]bool{}, leaseFlagged: map[store.Claim]bool{}, progress: progressWatch{gpu: map[string]gpuSeen{}, comps: map[*Instance][]string{}}}
}

func (c *checker) violate(format string, a ...any) {
	if len(c.violations) < 100 {
		c.violations = append(c.violations, fmt.Sprintf("t=%s: ", c.w.now.Sub(c.w.start))+fmt.Sprintf(format, a...))
	}
}

// nodeKey identifies a component across restarts of its main process.
func nodeKey(instance, comp string) string {
	name, _, _ := strings.Cut(instance, ":")
	return name + "/" + comp
}

func (c *checker) onEvent(r *Rec) {
	e := &r.Event
	cfg := c.w.cfg
	if e.Instance != "" && !c.seen[e.Instance] {
		c.seen[e.Instance] = true
		c.resync(e.Instance)
	}
	switch e.Event {
	case event.Claim:
		if h, ok := c.holder[e.File]; ok {
			c.violate("file %s claimed by %s while %s holds it", e.File, e.Worker, h)
		} else if a, ok := c.analysing[e.File]; ok && a != e.Worker && c.onFile(a, e.File) && !c.cutOff[e.File] {
			c.violate("two workers analyse %s at once: %s claims it while %s, alive, still runs it", e.File, e.Worker, a)
		}
		c.holder[e.File] = e.Worker
		c.analysing[e.File] = e.Worker
		c.lastClaim[e.Worker] = e.File
		delete(c.cutOff, e.File)
		c.crashKnow(e.File)
		c.checkClaimAllowed(e.File, e.Worker)
	case event.Tagged:
		c.tagged[e.File]++
		if c.tagged[e.File] > 1 {
			c.violate("file %s tagged twice", e.File)
		}
		if c.w.Store.TagWrites[e.File] > 1 {
			c.violate("file %s completed twice in the store", e.File)
		}
		delete(c.holder, e.File)
		c.endJob(e)
	case event.FileFailed, event.FileRetry, event.Release:
		if e.File != "" && (e.Worker == "" || c.holder[e.File] == e.Worker) {
			delete(c.holder, e.File)
		}
		c.endJob(e)
		if e.Event == event.Release && e.Instance != "" && e.Reason == "worker died" && !c.crashLateRelease(e) {
			c.crashRelease(e.File, e.Worker, e.Count, nil)
		}
	case event.Quarantined:
		c.crashQuarantined(e)
	case event.LeaseExpired:
		c.claimExpired(e.File, e.Worker)
	case event.Fault:
		if e.Reason == LostReply {
			switch e.Detail {
			case opClaim:
				c.crashKnow(e.File)
				c.checkClaimAllowed(e.File, e.Worker)
			case opReleaseWorker:
				c.crashLostRelease(e)
			}
			c.onLostReply(e)
		}
	case event.Stop:
		c.stopping[e.Instance] = true
		c.restartStop(e)
	case event.MainDeath:
		c.mainDied[e.Instance] = c.w.now
	case event.Status:
		h := c.run(e.Instance, e.Component)
		if e.To == "healthy" {
			if !h.healthy {
				h.healthy, h.since = true, c.checkedBefore(e.Instance)
			}
		} else {
			c.lifetimeReset(e.Instance, e.Component)
			h.healthy = false
		}
	case event.Exit:
		delete(c.live, e.Instance+"/"+e.Component)
		c.crashExit(e)
		c.releaseExit(e)
		c.leaseKill(e)
		c.lifetimeReset(e.Instance, e.Component)
		c.run(e.Instance, e.Component).down = true
	case event.RestartScheduled:
		k := nodeKey(e.Instance, e.Component)
		if c.stopping[e.Instance] {
			c.violate("restart of %s scheduled while stopping", e.Component)
		}
		if c.failed[k] {
			c.violate("restart of failed %s scheduled", k)
		}
		want := cfg.BackoffBase.Milliseconds()
		if prev := c.lastBack[k]; prev > 0 {
			want = min(prev*2, cfg.BackoffMax.Milliseconds())
		}
		if e.BackoffMs != want {
			c.violate("%s backoff %d ms, want %d ms", k, e.BackoffMs, want)
		}
		c.lastBack[k] = e.BackoffMs
		c.restartScheduled(e)
		c.lifetime[k]++
		if n := c.lifetime[k]; n > cfg.LifetimeLimit {
			c.violate("%s: %d restarts without a reset or %s of health, over the lifetime limit %d", k, n, cfg.LifetimeReset, cfg.LifetimeLimit)
		}
		if e.RestartCount > cfg.LifetimeLimit {
			c.violate("%s restart_count %d over the lifetime limit", k, e.RestartCount)
		}
		win := append(c.restarts[k], r.TMs)
		cut := r.TMs - cfg.Window.Milliseconds()
		for len(win) > 0 && win[0] <= cut {
			win = win[1:]
		}
		c.restarts[k] = win
		if len(win) > cfg.WindowLimit {
			c.violate("%s: %d restarts within %s", k, len(win), cfg.Window)
		}
	case event.BackoffReset:
		k := nodeKey(e.Instance, e.Component)
		if d := c.healthyFor(e.Instance, e.Component); d < cfg.HealthyReset {
			c.violate("%s backoff reset after %s of continuous health, want %s", k, d, cfg.HealthyReset)
		}
		c.lastBack[k] = 0
		c.lifetimeReset(e.Instance, e.Component)
	case event.Reset:
		k := nodeKey(e.Instance, e.Component)
		c.restartReset(e)
		c.lastBack[k] = 0
		c.failed[k] = false
		c.restarts[k] = nil
		c.lifetime[k] = 0
	case event.Failed:
		c.failed[nodeKey(e.Instance, e.Component)] = true
	case event.Spawn, event.Restart:
		if c.failed[nodeKey(e.Instance, e.Component)] {
			c.violate("failed %s spawned without a reset", e.Component)
		}
		if c.stopping[e.Instance] {
			c.violate("%s spawned while stopping", e.Component)
		}
		c.leaseKill(e)
		if e.Event == event.Restart {
			c.restarted(e)
		} else if e.PID != 0 {
			c.live[e.Instance+"/"+e.Component] = true
		}
		if h := c.run(e.Instance, e.Component); h.down {
			// A new process: whatever the monitor saw, health starts again.
			h.down, h.since = false, c.w.now
		}
	case event.Kill:
		c.checkKill(e)
		c.leaseKill(e)
	case event.StoreError:
		if e.Component != "" && e.Instance != "" && strings.HasPrefix(e.Reason, "save restart state") {
			c.unsaved[nodeKey(e.Instance, e.Component)] = true
		}
	case event.WorkerExit:
		c.checkCleanExit(e)
		if e.Component != "" {
			if in := c.instance(e.Instance); in != nil {
				c.deaths = append(c.deaths, death{workerID: in.node.Sup.WorkerID(e.Component), at: c.w.now})
				c.checkOrphanExit(in, e)
			}
			wid := e.Instance + "/" + e.Component
			delete(c.lastClaim, wid)
			for f, a := range c.analysing {
				if a == wid {
					delete(c.analysing, f)
				}
			}
		}
	}
}

// checkedBefore is when the monitor of instanceID made its previous status
// check, called while it emits the events of the current one: the owner
// may have seen a status begin at any tick since. One check interval ago
// when the instance is unknown or its monitor has not checked yet.
func (c *checker) checkedBefore(instanceID string) time.Time {
	ci := c.w.cfg.CheckInterval
	if in := c.instance(instanceID); in != nil {
		if due := in.node.Mon.CheckDue(); !due.IsZero() && due.Add(-ci).Before(c.w.now) {
			return due.Add(-ci)
		}
	}
	return c.w.now.Add(-ci)
}

// onStop: the main process of instance id was stopped from from to to
// (reported as it continues).
func (c *checker) onStop(id string, from, to time.Time) {
	c.stops[id] = append(c.stops[id], span{from, to})
}

// stoppedAfter is how long the main process of instance id was stopped
// after t, up to now.
func (c *checker) stoppedAfter(id string, t time.Time) time.Duration {
	var d time.Duration
	s := c.stops[id]
	for i := len(s) - 1; i >= 0 && s[i].to.After(t); i-- {
		from := s[i].from
		if from.Before(t) {
			from = t
		}
		d += s[i].to.Sub(from)
	}
	return d
}

// onHeal: host reaches the store again, or its main process continues.
func (c *checker) onHeal(host string) { c.healedAt[host] = c.w.now }

// cutOffNow reports whether the host of workerID is cut off from the store
// or has its main process stopped, or got back less than lease_ttl ago.
func (c *checker) cutOffNow(workerID string) bool {
	host, _, _ := strings.Cut(workerID, ":")
	if c.w.partitioned[host] || c.w.mainStopped(host) {
		return true
	}
	h, ok := c.healedAt[host]
	return ok && c.w.now.Sub(h) <= c.w.cfg.LeaseTTL
}

// claimExpired: a cleanup deleted worker's claim on file. The claim is gone
// from the store; the worker, if it still lives, is still on its job.
func (c *checker) claimExpired(file, worker string) {
	if file != "" && c.analysing[file] == worker && c.cutOffNow(worker) {
		c.cutOff[file] = true
	}
	if file != "" && (worker == "" || c.holder[file] == worker) {
		delete(c.holder, file)
	}
}

// onWrite: workerID writes tags into file (the fake analyzer's last step).
func (c *checker) onWrite(file, workerID string) {
	if cl, held := c.w.Store.ClaimOf(file); !held || cl.WorkerID != workerID {
		holder := "nobody"
		if held {
			holder = cl.WorkerID
		}
		c.violate("%s writes tags into %s while %s holds its claim", workerID, file, holder)
	}
}

// endJob ends the job of the worker that reports an outcome for its file.
// An outcome reported for another worker (the owner releasing a dead
// worker's claims) ends that worker's job too.
func (c *checker) endJob(e *event.Event) {
	if e.File != "" && e.Worker != "" && c.analysing[e.File] == e.Worker {
		delete(c.analysing, e.File)
	}
}

// onFile reports whether the process of worker id is alive, not stopped
// (SIGSTOP: it does no work until killed) and still on file, per the
// simulator's own state of the process, not the core worker's: it runs the
// job on file (Process.busy running, its job file), or loads the models
// for it (busy loading: the job of the worker's last claim, per the
// trace, which it runs once they are loaded). A core bug in what the
// worker reports holding cannot hide a second analysis.
func (c *checker) onFile(workerID, file string) bool {
	inst, comp, _ := strings.Cut(workerID, "/")
	in := c.instance(inst)
	if in == nil {
		return false
	}
	p := in.procs[comp]
	if p == nil || !p.alive || p.hung {
		return false
	}
	switch p.busy {
	case running:
		return p.job.FileKey == file
	case loading:
		return c.lastClaim[workerID] == file
	}
	return false
}

// run returns the health record of one component of one main process.
func (c *checker) run(instance, comp string) *healthRun {
	k := instance + "/" + comp
	h := c.health[k]
	if h == nil {
		h = &healthRun{}
		c.health[k] = h
	}
	return h
}

// healthyFor is how long the component has been continuously healthy per
// its monitor's status events, counted from the check before the one that
// reported it (the owner may have seen it begin at any tick since), at the
// earliest from its process's spawn, less the time its main process was
// stopped meanwhile: health the owner did not see does not count
// (Supervisor.Discount). A stop can only begin after the check or spawn
// the run counts from, since the loop ran then.
func (c *checker) healthyFor(instance, comp string) time.Duration {
	h := c.run(instance, comp)
	if !h.healthy || h.down {
		return 0
	}
	return c.w.now.Sub(h.since) - c.stoppedAfter(instance, h.since)
}

// lifetimeReset clears the component's lifetime count and restart window
// when its current healthy run has lasted lifetime_reset (docs/design.md §5: the
// owner resets them then). It is called where a run may end (a status
// change, a death) and where the owner resets (backoff_reset); it does not
// end the run.
func (c *checker) lifetimeReset(instance, comp string) {
	cfg := c.w.cfg
	if c.healthyFor(instance, comp) >= cfg.LifetimeReset {
		k := nodeKey(instance, comp)
		c.lifetime[k] = 0
		c.restarts[k] = nil
	}
}

// resync starts the oracle for a new main process from the restart state it
// loads from the store: what a crashed main never managed to save is lost to
// its successor too, by design. The checker's own lifetime count may drop to
// the persisted one then (a restart whose state was never written is
// forgotten), never rise; it starts from the persisted one only for a
// component the checker has not seen before. It may drop only where a save
// failed (checkPersisted): otherwise the persisted state must match the
// checker's model.
func (c *checker) resync(instanceID string) {
	in := c.instance(instanceID)
	if in == nil {
		return
	}
	cfg := c.w.cfg
	for _, comp := range in.node.Sup.Components() {
		k := nodeKey(instanceID, comp)
		st, ok := c.w.Store.RestartState(k)
		if _, known := c.lifetime[k]; known && !c.unsaved[k] {
			c.checkPersisted(k, st)
		}
		delete(c.unsaved, k)
		if !ok {
			c.failed[k], c.lastBack[k], c.restarts[k], c.lifetime[k] = false, 0, nil, 0
			continue
		}
		c.failed[k] = st.FailedAtWallMs != 0 || st.FailureReason != ""
		c.lastBack[k] = 0
		if st.Consecutive > 0 {
			c.lastBack[k] = backoffMs(cfg.BackoffBase, cfg.BackoffMax, st.Consecutive-1)
		}
		if n, known := c.lifetime[k]; known {
			c.lifetime[k] = min(n, st.RestartCount)
		} else {
			c.lifetime[k] = st.RestartCount // a store that outlived an earlier run
		}
		var win []int64
		for _, ms := range st.Recent {
			win = append(win, ms-c.w.start.UnixMilli())
		}
		c.restarts[k] = win
	}
}

// backoffMs is docs/design.md §5's backoff after n consecutive restarts,
// min(base·2^n, hi), in milliseconds.
func backoffMs(base, hi time.Duration, n int) int64 {
	b := base
	for i := 0; i < n && b < hi; i++ {
		b *= 2
	}
	return min(b, hi).Milliseconds()
}

func (c *checker) instance(id string) *Instance {
	for _, in := range c.w.Instances {
		if in.ID == id {
			return in
		}
	}
	return nil
}

// checkKill: a worker that frames and makes progress is never killed.
func (c *checker) checkKill(e *event.Event) {
	in := c.instance(e.Instance)
	if in == nil {
		return
	}
	p := in.procs[e.Component]
	if p == nil {
		return
	}
	r := e.Reason
	switch {
	case strings.HasPrefix(r, "hang"), strings.HasPrefix(r, "no first frame"):
		if !p.hung && c.w.sc.BootTime() < c.w.cfg.StartupTimeout {
			c.violate("%s killed (%s) but it was framing", e.Component, r)
		}
	case strings.HasPrefix(r, "stall"):
		if p.busy != running || !c.w.specs[p.job.FileKey].Stall {
			c.violate("%s killed (%s) but its job was progressing", e.Component, r)
		}
	case strings.HasPrefix(r, "cold start"):
		if c.w.sc.ModelLoad() < c.w.cfg.ColdStartMax && !p.hung {
			c.violate("%s killed (%s) within cold_start_max", e.Component, r)
		}
	}
}

// checkOrphanExit: a worker never exits mid-job because its main process
// died (docs/design.md §8). An orphan leaves its running job only when the job's
// progress has stood still for stall_after since the later of the job's
// start and the main death; killed by a signal (a crash, the process tree
// killed) it has no say.
func (c *checker) checkOrphanExit(in *Instance, e *event.Event) {
	p := in.procs[e.Component]
	if p == nil || p.pid != e.PID || in.alive || p.busy != running || e.Code == nil || *e.Code < 0 {
		return
	}
	file := p.job.FileKey
	if cl, held := c.w.Store.ClaimOf(file); *e.Code == 0 && (!held || cl.WorkerID != in.node.Sup.WorkerID(e.Component)) {
		return // its claim is gone: the job goes on for nobody (worker.OrphanAbandons)
	}
	if !c.w.specs[file].Stall {
		c.violate("orphan %s exited mid-job (%s) after the main process died, its job %s progressing", e.Component, e.Reason, file)
		return
	}
	from := p.jobStart
	if d, ok := c.mainDied[in.ID]; ok && d.After(from) {
		from = d
	}
	if still := c.w.now.Sub(from); still < c.w.cfg.StallAfter {
		c.violate("orphan %s abandoned its job %s after %s without progress, want %s", e.Component, file, still, c.w.cfg.StallAfter)
	}
}

// afterEvent checks state-based properties.
func (c *checker) afterEvent() {
	w := c.w
	c.crashAfterEvent()
	// A host cut off from the store counts as store trouble too: its dead
	// workers' claims can only be released once it is back, or by another
	// host once their leases ran out. So does a lock held by a hung worker
	// (storelock.go).
	down := w.Store.CurrentFault() != memstore.Healthy || w.anyPartitioned() || w.lockHolder != nil
	if down || c.storeDown || w.Store.Faults != c.storeFaults || w.lostReplies != c.lostReplies {
		// The store is down or just came back, or an operation just failed
		// by injection (or lost its answer: its caller saw a failure).
		c.faultAt = w.now
	}
	c.storeDown, c.storeFaults, c.lostReplies = down, w.Store.Faults, w.lostReplies
	c.crashUnreported()
	c.releaseAfterEvent()
	c.leaseAfterEvent()
	c.progressAfterEvent()
	c.pauseAfterEvent()
	// A dead worker's claims are released within lease_ttl + cleanup period
	// (plus one check interval) of the latest of its death, a main process
	// being there to do it (alive and not stopped: main: hang), and the
	// store's last recovery. A main process runs its first cleanup a period
	// after it starts, and expires no lease for a lease_ttl after it starts
	// or resumes from a stall of node.GraceAfter or more (it cannot know
	// the store's recent past), so "there" is counted from the start, or
	// the end of the last stop (any stop: the lenient side), of the main
	// process up the longest.
	up := false
	for _, in := range w.Instances {
		if !in.alive || w.now.Before(in.loop.stopped) {
			delete(c.upSince, in)
			continue
		}
		since, ok := c.upSince[in]
		if !ok {
			since = w.now
			c.upSince[in] = since
		}
		if !up || since.Before(c.mainUpAt) {
			c.mainUpAt = since
		}
		up = true
	}
	limit := w.cfg.LeaseTTL + w.cfg.CleanupPeriod + w.cfg.CheckInterval
	keep := c.deaths[:0]
	for _, d := range c.deaths {
		from := d.at
		for _, t := range []time.Time{c.mainUpAt, c.faultAt} {
			if t.After(from) {
				from = t
			}
		}
		if !up || w.now.Sub(from) <= limit {
			keep = append(keep, d)
			continue
		}
		for _, cl := range w.Store.Claims() {
			if cl.WorkerID == d.workerID && !cl.ClaimedAt.After(d.at) {
				c.violate("claim on %s of dead %s not released %s after its death", cl.FileKey, d.workerID, w.now.Sub(d.at))
			}
		}
	}
	c.deaths = keep
}

// final checks the end state, in file order.
func (c *checker) final() {
	c.crashAfterEvent()
	files := make([]string, 0, len(c.w.Store.TagWrites))
	for f := range c.w.Store.TagWrites {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if n := c.w.Store.TagWrites[f]; n > 1 {
			c.violate("file %s completed %d times", f, n)
		}
	}
}
