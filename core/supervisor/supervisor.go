// Package supervisor is the owner of the worker processes (docs/design.md §4, §5, §7):
// it derives each component's status from pipe facts, declares deaths, applies
// the restart policy with one pending restart timer per component, renews the
// leases of its live workers, releases a dead worker's claims and quarantines
// poison files.
//
// It is a state machine: the driver feeds it facts (Spawned via Processes,
// PipeData, PipeClosed, Exited, Tick, Stop, ForceStop, Reset) with the
// current time and it acts through its ports (Processes, store.Store,
// event.Sink). It never reads a clock, sleeps or starts goroutines.
//
// Invariants:
//   - at most one pending restart timer per component; a new death replaces it;
//   - Stop cancels every pending timer before signalling any worker, and no
//     restart is ever scheduled once stopping;
//   - a stop is done only once every worker is reaped and every store write
//     it owes (claim releases, restart states) is written, or given up by
//     ForceStop (forcestop.go);
//   - a failed component is never spawned again until Reset;
//   - a component is not respawned while its dead process's claims are not
//     yet released (so a late release can never drop a new process's claims);
//   - events of an older process generation are ignored.
package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// Signal is what the owner asks the OS to deliver.
type Signal int

const (
	// Term asks the worker to finish its job and exit (SIGTERM).
	Term Signal = iota
	// Kill ends the process at once (SIGKILL).
	Kill
)

func (s Signal) String() string {
	if s == Term {
		return "SIGTERM"
	}
	return "SIGKILL"
}

// Processes is the port to the OS. Spawn starts generation gen of component
// and returns its pid; its frames, pipe EOF and exit are reported back with
// the same gen. Implementations must not call back into the supervisor
// synchronously.
type Processes interface {
	Spawn(component string, gen uint64) (pid int, err error)
	Signal(component string, gen uint64, sig Signal)
}

// Supervisor owns the workers of one instance.
type Supervisor struct {
	cfg   Config
	procs Processes
	store store.Store
	sink  event.Sink

	comps []*component // in component order
	byID  map[string]*component

	started    bool
	stopping   bool
	forced     bool   // ForceStop: store writes that fail are given up, not retried
	detached   string // a stop gave writes up on a detached store: its first error (forcestop.go)
	stopAt     time.Time
	nextRenew  time.Time
	renewFails int
}

// New returns a supervisor for cfg.Workers components. Nothing is spawned
// before Start.
func New(cfg Config, procs Processes, st store.Store, sink event.Sink) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = event.Discard
	}
	s := &Supervisor{cfg: cfg, procs: procs, store: st, sink: sink, byID: make(map[string]*component, cfg.Workers)}
	for i := 0; i < cfg.Workers; i++ {
		id := ComponentID(i)
		c := &component{id: id, key: RestartKey(cfg.Node, id), workerID: cfg.Instance + "/" + id}
		c.policy.Component = c.key
		s.comps = append(s.comps, c)
		s.byID[id] = c
	}
	return s, nil
}

// Components returns the component ids in order.
func (s *Supervisor) Components() []string {
	ids := make([]string, len(s.comps))
	for i, c := range s.comps {
		ids[i] = c.id
	}
	return ids
}

// Instance returns the id of this running supervisor.
func (s *Supervisor) Instance() string { return s.cfg.Instance }

// WorkerID returns the instance-qualified worker id of a component.
func (s *Supervisor) WorkerID(id string) string { return s.cfg.Instance + "/" + id }

// Start loads each component's persisted restart state and spawns every
// component that is not failed. Components whose state cannot be loaded (store
// down) are retried on each Tick and not spawned before, so a crash loop cannot
// escape its limits through a store outage at start.
func (s *Supervisor) Start(ctx context.Context, now time.Time) {
	s.started = true
	s.nextRenew = now.Add(s.cfg.LeaseTTL / 3)
	for _, c := range s.comps {
		s.load(ctx, now, c)
	}
}

func (s *Supervisor) load(ctx context.Context, now time.Time, c *component) {
	st, ok, err := s.store.LoadRestart(ctx, c.key)
	if err != nil {
		c.loadPending = true
		s.storeError(now, c, "load restart state", err)
		return
	}
	c.loadPending = false
	if ok {
		st.Component = c.key
		c.policy = st
	}
	if c.policy.Failed() {
		c.failed = true
		s.sink.Emit(event.Event{T: now, Event: event.Failed, Instance: s.cfg.Instance, Component: c.id, Reason: c.policy.FailureReason + " (persisted)"})
		return
	}
	if !s.stopping {
		s.spawn(ctx, now, c, false)
	}
}

func (s *Supervisor) spawn(ctx context.Context, now time.Time, c *component, isRestart bool) {
	c.restartPending = false
	c.gen++
	c.resetProcessFacts(now)
	pid, err := s.procs.Spawn(c.id, c.gen)
	if isRestart {
		s.sink.Emit(event.Event{T: now, Event: event.Restart, Instance: s.cfg.Instance, Component: c.id, RestartCount: c.policy.RestartCount})
	}
	if err != nil {
		s.sink.Emit(event.Event{T: now, Event: event.Spawn, Instance: s.cfg.Instance, Component: c.id, Reason: "spawn failed: " + err.Error()})
		c.running = true // so that die() accounts for it
		s.die(ctx, now, c, "spawn failed: "+err.Error(), -1)
		return
	}
	c.pid = pid
	c.running = true
	s.sink.Emit(event.Event{T: now, Event: event.Spawn, Instance: s.cfg.Instance, Component: c.id, PID: pid})
}

// PipeData feeds bytes read from a worker's frame pipe. Malformed, oversized
// and spoofed lines are counted and dropped; they never change status.
func (s *Supervisor) PipeData(id string, gen uint64, data []byte, now time.Time) {
	c := s.byID[id]
	if c == nil || gen != c.gen || !c.running {
		return
	}
	c.splitter.Feed(data, func(line []byte) {
		f, err := c.parser.Parse(line)
		if err != nil {
			s.drop(now, c, err.Error())
			return
		}
		if f.ComponentID != c.id {
			s.drop(now, c, fmt.Sprintf("frame: component_id %q on the pipe of %s", f.ComponentID, c.id))
			return
		}
		c.observe(&f, now)
	}, func() { s.drop(now, c, frame.ErrTooLong.Error()) })
}

func (s *Supervisor) drop(now time.Time, c *component, reason string) {
	c.dropped++
	s.sink.Emit(event.Event{T: now, Event: event.FrameDropped, Instance: s.cfg.Instance, Component: c.id, Reason: reason, Count: c.dropped})
}

// PipeClosed reports EOF on a worker's frame pipe: the worker is dead. Its
// exit normally follows at once (a process's pipes close when it exits); if
// the process is still there after PipeCloseGrace — it closed the pipe but
// lives on — Tick kills it. The death is handled on the exit.
func (s *Supervisor) PipeClosed(id string, gen uint64, now time.Time) {
	c := s.byID[id]
	if c == nil || gen != c.gen || !c.running || c.killing || !c.pipeClosedAt.IsZero() {
		return
	}
	c.pipeClosedAt = now
}

// Exited reports that generation gen of a worker exited with code (-1: killed
// by a signal that Signaled would name).
func (s *Supervisor) Exited(ctx context.Context, id string, gen uint64, code int, now time.Time) {
	s.exited(ctx, id, gen, code, "", now)
}

// Signaled reports that generation gen of a worker was ended by the signal
// named sig ("SIGKILL"): its death's reason is "killed by SIGKILL", code -1
// (unless the supervisor killed it, whose reason says why).
func (s *Supervisor) Signaled(ctx context.Context, id string, gen uint64, sig string, now time.Time) {
	s.exited(ctx, id, gen, -1, sig, now)
}

func (s *Supervisor) exited(ctx context.Context, id string, gen uint64, code int, sig string, now time.Time) {
	c := s.byID[id]
	if c == nil || gen != c.gen || !c.running {
		return
	}
	reason := c.killReason
	switch {
	case reason != "":
	case sig != "":
		reason = "killed by " + sig
	default:
		reason = fmt.Sprintf("exited with code %d", code)
	}
	s.die(ctx, now, c, reason, code)
}

// kill sends SIGKILL to c for cause (one of KillCauses), reason saying
// why for people.
func (s *Supervisor) kill(now time.Time, c *component, cause, reason string) {
	c.killing = true
	c.killReason = reason
	s.sink.Emit(event.Event{T: now, Event: event.Kill, Instance: s.cfg.Instance, Component: c.id, Reason: reason, Cause: cause, PID: c.pid})
	s.procs.Signal(c.id, c.gen, Kill)
}

// die handles a death: release the claims (counting a crash against each
// file, unless stopping), then ask the restart policy.
func (s *Supervisor) die(ctx context.Context, now time.Time, c *component, reason string, code int) {
	c.running, c.killing = false, false
	c.diedAt = now
	s.sink.Emit(event.Event{T: now, Event: event.Exit, Instance: s.cfg.Instance, Component: c.id, Reason: reason, Code: event.IntPtr(code), PID: c.pid})
	c.releasePending = true
	c.countCrash = !s.stopping && code != 0
	c.death = store.Death{ID: deathID(c.gen, now), At: now}
	s.release(ctx, now, c)
	if s.stopping || c.failed {
		return
	}
	st, d := restart.OnDeath(s.cfg.Restart, c.policy, now.UnixMilli())
	c.policy = st
	s.persist(ctx, now, c)
	if !d.Restart {
		c.failed = true
		c.restartPending = false
		s.sink.Emit(event.Event{T: now, Event: event.Failed, Instance: s.cfg.Instance, Component: c.id, Reason: d.Reason})
		return
	}
	// One pending timer per component: this replaces any earlier one.
	c.restartPending = true
	c.restartAt = now.Add(d.Backoff)
	s.sink.Emit(event.Event{T: now, Event: event.RestartScheduled, Instance: s.cfg.Instance, Component: c.id,
		BackoffMs: d.Backoff.Milliseconds(), RestartCount: st.RestartCount, Reason: reason})
}

// release frees the dead process's claims and, when it crashed, counts the
// crash against each file and quarantines the poison files, all in one
// store operation: a poison file is never eligible between its release and
// its quarantine, and a release that fails is retried whole.
//
// A release that fails may have been made all the same (its answer lost
// after the commit): the retry finds no claims left. It names the same
// death (c.death), and the store answers it with the receipt the first
// call left (store.Reply), so the `release` and `quarantined` events of
// what the first call did are emitted once the retry is answered — the
// events of a death come from the one answer the supervisor hears, never
// twice, whatever the number of retries.
func (s *Supervisor) release(ctx context.Context, now time.Time, c *component) {
	if !c.releasePending {
		return
	}
	var crash *store.Crash
	if c.countCrash {
		crash = &store.Crash{QuarantineAt: s.cfg.QuarantineAfter, Reason: QuarantineReason(s.cfg.QuarantineAfter)}
	}
	rel, err := s.store.ReleaseWorker(ctx, c.workerID, c.death, crash)
	if err != nil {
		s.storeError(now, c, "release claims", err)
		if s.givesUp(err) {
			c.releasePending, c.releaseAbandoned = false, true
		}
		return
	}
	c.releasePending, c.releaseAbandoned = false, false
	for _, r := range rel {
		s.sink.Emit(event.Event{T: now, Event: event.Release, Instance: s.cfg.Instance, Component: c.id, File: r.FileKey,
			Worker: c.workerID, Reason: "worker died", Cause: ReleaseDied, Count: r.CrashCount})
		if r.Quarantined {
			s.sink.Emit(event.Event{T: now, Event: event.Quarantined, Instance: s.cfg.Instance, File: r.FileKey,
				Reason: QuarantineReason(s.cfg.QuarantineAfter), Count: r.CrashCount})
		}
	}
}

// deathID names death gen of a worker id at now for the store's release
// receipt: the generation tells the deaths of one main process apart; the
// time guards against an instance id used again by a later main process
// (whose generations start again from 1) — production ids are new at every
// start (<node>:<pid>:<start-ms>), tests may reuse one.
func deathID(gen uint64, now time.Time) string {
	return strconv.FormatUint(gen, 10) + "@" + strconv.FormatInt(now.UnixMilli(), 10)
}

// QuarantineReason is the last error of a poison file quarantined under
// quarantine_after n: "crashed a worker (quarantine_after 2 reached)". It
// begins with the design's reason, "crashed a worker", for whatever
// matches on it, and names the limit rather than the file's count (a
// quarantined event carries the count, which a lowered limit may leave
// above it).
func QuarantineReason(n int) string {
	return fmt.Sprintf("crashed a worker (quarantine_after %d reached)", n)
}

func (s *Supervisor) persist(ctx context.Context, now time.Time, c *component) {
	if err := s.store.SaveRestart(ctx, c.key, c.policy); err != nil {
		giveUp := s.givesUp(err)
		c.persistPending, c.persistAbandoned = !giveUp, giveUp
		s.storeError(now, c, "save restart state", err)
		return
	}
	c.persistPending, c.persistAbandoned = false, false
}

func (s *Supervisor) storeError(now time.Time, c *component, what string, err error) {
	s.sink.Emit(event.Event{T: now, Event: event.StoreError, Instance: s.cfg.Instance, Component: c.id, Reason: what + ": " + err.Error()})
}

// Tick advances time: detects hangs, startup timeouts, cold-start overruns
// and stalls and enforces the stop grace (Watch), then retries pending store
// writes, fires due restart timers, resets backoff after continuous health,
// and renews leases.
func (s *Supervisor) Tick(ctx context.Context, now time.Time) {
	if !s.started {
		return
	}
	s.Watch(now)
	for _, c := range s.comps {
		if c.loadPending {
			s.load(ctx, now, c)
			continue
		}
		if c.persistPending {
			s.persist(ctx, now, c)
		}
		if c.releasePending {
			s.release(ctx, now, c)
		}
		// A restart waits for the dead process's claims to be released and
		// for the restart state that counts it to be written: a restart the
		// store does not know of would escape the limits at the next app
		// start.
		if c.restartPending && !now.Before(c.restartAt) && !c.releasePending && !c.persistPending && !s.stopping && !c.failed {
			s.spawn(ctx, now, c, true)
		}
		s.trackHealthy(ctx, now, c)
	}
	if !now.Before(s.nextRenew) {
		s.renew(ctx, now)
	}
}

// trackHealthy applies healthy_reset and the lifetime reset.
func (s *Supervisor) trackHealthy(ctx context.Context, now time.Time, c *component) {
	if c.failed || s.Status(c.id, now) != health.Healthy {
		c.healthySince = time.Time{}
		return
	}
	if c.healthySince.IsZero() {
		c.healthySince = now
		return
	}
	healthyFor := now.Sub(c.healthySince)
	if !restart.HealthyDue(s.cfg.Restart, c.policy, healthyFor) {
		return
	}
	st, changed := restart.OnHealthy(s.cfg.Restart, c.policy, healthyFor, now.UnixMilli())
	if changed {
		c.policy = st
		s.persist(ctx, now, c)
		s.sink.Emit(event.Event{T: now, Event: event.BackoffReset, Instance: s.cfg.Instance, Component: c.id, RestartCount: st.RestartCount})
	}
}

// renew extends the leases of the live workers' claims. A worker being
// killed is dead already (docs/design.md §4): its claims are released when its
// exit is seen, and if that never comes (a process that cannot leave an
// uninterruptible wait), its leases run out and claim cleanup returns them.
func (s *Supervisor) renew(ctx context.Context, now time.Time) {
	var ids []string
	for _, c := range s.comps {
		if c.running && !c.killing {
			ids = append(ids, c.workerID)
		}
	}
	s.nextRenew = now.Add(s.cfg.LeaseTTL / 3)
	if len(ids) == 0 {
		return
	}
	if _, err := s.store.RenewLeases(ctx, ids, now.Add(s.cfg.LeaseTTL)); err != nil {
		s.renewFails++
		s.sink.Emit(event.Event{T: now, Event: event.StoreError, Instance: s.cfg.Instance, Reason: "renew leases: " + err.Error()})
		s.nextRenew = now // retry on the next tick
	}
}

// Deadline returns the earliest pending restart that Tick can carry out, or
// the end of the stop grace while a worker is still running, so a driver
// can wake exactly then (it also ticks every check interval). A
// restart waiting for its dead process's claims to be released is not a
// deadline: the release is retried on the regular ticks.
func (s *Supervisor) Deadline() (time.Time, bool) {
	var t time.Time
	found := false
	for _, c := range s.comps {
		// A restart held back by a store write (the release of its claims,
		// its restart state) is not a deadline: the write is retried at the
		// next tick, and reporting the past due time would spin the loop.
		if c.restartPending && !c.failed && !c.releasePending && !c.persistPending && !c.loadPending && !s.stopping && (!found || c.restartAt.Before(t)) {
			t, found = c.restartAt, true
		}
		if s.stopping && c.running && !c.killing { // the stop grace's end (deathDue while stopping)
			if grace := s.deathDue(c); !found || grace.Before(t) {
				t, found = grace, true
			}
		}
	}
	return t, found
}

// Stop begins a graceful stop: pending restart timers are cancelled first,
// then every live worker gets SIGTERM; after StopGrace, Tick kills the rest.
func (s *Supervisor) Stop(now time.Time) {
	if s.stopping {
		return
	}
	s.beginStop(now, "")
	for _, c := range s.comps {
		if c.running && !c.killing {
			s.procs.Signal(c.id, c.gen, Term)
		}
	}
}

// beginStop marks the stop and cancels every pending restart timer, before
// any worker is signalled; reason goes on the stop event.
func (s *Supervisor) beginStop(now time.Time, reason string) {
	s.stopping = true
	s.stopAt = now
	for _, c := range s.comps {
		c.restartPending = false
	}
	s.sink.Emit(event.Event{T: now, Event: event.Stop, Instance: s.cfg.Instance, Reason: reason})
}

// Stopping reports whether Stop (or ForceStop) was called.
func (s *Supervisor) Stopping() bool { return s.stopping }

// Done reports whether a stop has completed: every process exited, every
// dead worker's claims are released and every restart state is written. A
// stop that ended with a decision only in memory (a worker given up on while
// the store refused the write) would let the next start spawn it again; so
// a store that is down holds the stop, and Tick keeps retrying, until it
// answers (WaitingOnStore says so) — or until ForceStop gives those writes
// up, after which only the workers' exits are waited for. A write the store
// refuses as detached (store.ErrDetached: it can take none of this
// process's writes again) is given up at once during a stop, as after
// ForceStop: waiting could only end with a second signal, and the next
// process, which opens the database now at the store's address, cleans the
// claims up once their leases expire (Abandoned names them).
func (s *Supervisor) Done() bool {
	if !s.stopping {
		return false
	}
	for _, c := range s.comps {
		if c.running || c.releasePending || c.persistPending {
			return false
		}
	}
	return true
}

// Reset is the manual reset of docs/design.md §5: it clears the component's counters
// and failure state and, unless stopping, restarts it at once if it is not
// running. Before Start it only clears and saves the state: Start spawns.
func (s *Supervisor) Reset(ctx context.Context, id string, now time.Time) error {
	c := s.byID[id]
	if c == nil {
		return fmt.Errorf("supervisor: no component %q", id)
	}
	c.failed = false
	c.loadPending = false
	c.policy = restart.Reset(c.policy, now.UnixMilli())
	c.policy.Component = c.key
	s.persist(ctx, now, c)
	s.sink.Emit(event.Event{T: now, Event: event.Reset, Instance: s.cfg.Instance, Component: c.id})
	if s.started && !c.running && !s.stopping {
		c.restartPending = true
		c.restartAt = now
		if !c.releasePending && !c.persistPending { // else Tick spawns once the writes are done
			s.spawn(ctx, now, c, true)
		}
	}
	return nil
}

// Status derives the owner status of docs/design.md §4 from pipe facts.
func (s *Supervisor) Status(id string, now time.Time) health.Status {
	c := s.byID[id]
	if c == nil {
		return health.Unhealthy
	}
	switch {
	case c.failed:
		return health.Failed
	case !c.running:
		if c.gen == 0 && !c.loadPending {
			return health.Pending // about to be spawned
		}
		return health.Unhealthy // dead, or waiting for the store to start it
	case c.killing || !c.pipeClosedAt.IsZero():
		return health.Unhealthy
	case !c.hasFrame:
		if now.Sub(c.spawnedAt) < s.cfg.StartupTimeout {
			return health.Pending
		}
		return health.Unhealthy
	case now.Sub(c.lastFrameAt) > s.cfg.StaleAfter:
		return health.Unhealthy
	default:
		return health.StatusOf(c.phase)
	}
}

// Info is a read-only view of one component for APIs and tests.
type Info struct {
	Component      string
	WorkerID       string
	PID            int
	Gen            uint64
	Running        bool
	Phase          health.Phase
	CurrentJob     string
	Progress       int64
	LastFrame      time.Time
	FramesDropped  int
	RestartPending bool
	RestartAt      time.Time
	// ReleasePending: the release of the dead process's claims waits for
	// an answer from the store (Tick retries it).
	ReleasePending bool
	Failed         bool
	Policy         restart.State
	Telemetry      frame.Frame
}

// Info returns a view of component id.
func (s *Supervisor) Info(id string) (Info, bool) {
	c := s.byID[id]
	if c == nil {
		return Info{}, false
	}
	return Info{
		Component: c.id, WorkerID: c.workerID, PID: c.pid, Gen: c.gen, Running: c.running, Phase: c.phase,
		CurrentJob: c.job, Progress: c.progress, LastFrame: c.lastFrameAt, FramesDropped: c.dropped,
		RestartPending: c.restartPending, RestartAt: c.restartAt, ReleasePending: c.releasePending, Failed: c.failed, Policy: c.policy, Telemetry: c.last,
	}, true
}

// PendingTimers counts the pending restart timers of a component (0 or 1).
func (s *Supervisor) PendingTimers(id string) int {
	if c := s.byID[id]; c != nil && c.restartPending {
		return 1
	}
	return 0
}
