// Package node composes the main process's state machines — the supervisor
// (owner), the HealthMonitor with its claim-cleanup hook, and the GPU health
// cache — into one thing a driver ticks. The production runtime and the
// simulator drive this same type.
package node

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/monitor"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// Config configures one main process.
type Config struct {
	Supervisor    supervisor.Config
	Monitor       monitor.Config
	CleanupPeriod time.Duration // 30 s
	// HistoryRetention: the history-retention hook deletes health-history
	// rows older than this, every HistoryPrunePeriod (or a quarter of the
	// retention when that is shorter); 0 disables it.
	HistoryRetention time.Duration // 7 days
	// Self identifies this main process in the hold on its node name
	// (host, pid space, pid, start); the instance and the hold's end are
	// filled in. Liveness tells whether another holder's process still
	// runs; nil: never known (a holder is waited for until it lapses).
	Self     NameHolder
	Liveness func(NameHolder) Liveness
}

// DefaultHistoryRetention is how long health history is kept by default.
const DefaultHistoryRetention = 7 * 24 * time.Hour

// HistoryPrunePeriod is how often old health history is deleted.
const HistoryPrunePeriod = time.Hour

// DefaultConfig returns the defaults of docs/design.md §13.
func DefaultConfig(instance, nodeName string, workers int) Config {
	return Config{
		Supervisor:    supervisor.DefaultConfig(instance, nodeName, workers),
		Monitor:       monitor.DefaultConfig(),
		CleanupPeriod: claim.DefaultCleanupPeriod,

		HistoryRetention: DefaultHistoryRetention,
	}
}

// Node is one main process's decisions.
type Node struct {
	cfg   Config
	Sup   *supervisor.Supervisor
	Mon   *monitor.Monitor
	store store.Store
	sink  event.Sink
	// troubleAt is the time of the last store failure this main process
	// saw (a lease renewal, a cleanup, a restart-state write…), or of its
	// start, or of the end of its last stall of GraceAfter or more (it
	// could not see the store before or meanwhile): the cleanup's grace
	// runs a lease_ttl from it.
	// A failure counts until the tick after it begins (troubled): a call
	// stamped with its turn's start may have waited long on a held lock
	// before it failed, and the store was no more reachable meanwhile.
	troubleAt time.Time
	troubled  bool
	name      nameState
	started   bool // Start was called
}

// New wires a supervisor and a monitor sharing st and sink.
func New(cfg Config, procs supervisor.Processes, st store.Store, sink event.Sink) (*Node, error) {
	if sink == nil {
		sink = event.Discard
	}
	if cfg.CleanupPeriod <= 0 {
		return nil, fmt.Errorf("node config: cleanup_period must be > 0, got %s", cfg.CleanupPeriod)
	}
	n := &Node{cfg: cfg, store: st}
	// Every event of the node and its parts passes here, so that every store
	// failure counts for the cleanup's grace (cleanup).
	watched := event.SinkFunc(func(e event.Event) {
		if e.Event == event.StoreError {
			n.troubled = true
			if e.T.After(n.troubleAt) {
				n.troubleAt = e.T
			}
		}
		sink.Emit(e)
	})
	n.sink = watched
	sup, err := supervisor.New(cfg.Supervisor, procs, st, watched)
	if err != nil {
		return nil, err
	}
	n.Sup = sup
	n.Mon = monitor.New(cfg.Monitor, cfg.Supervisor.Instance, st, watched)
	for _, id := range sup.Components() {
		n.Mon.Register(id, n)
	}
	n.Mon.AddHook(monitor.Hook{Name: "claim cleanup", Period: cfg.CleanupPeriod, Run: n.cleanup})
	if cfg.HistoryRetention > 0 {
		n.Mon.AddHook(monitor.Hook{Name: "history retention", Period: min(HistoryPrunePeriod, cfg.HistoryRetention/4),
			Run: n.pruneHistory})
	}
	return n, nil
}

// Start takes the node name (name.go), then loads restart state and spawns
// the workers. While the name is held by another process that may be gone,
// or the store cannot be read, Tick looks again; a name held by a running
// main process halts the node (Halted).
func (n *Node) Start(ctx context.Context, now time.Time) {
	n.started = true
	// The store's past is unknown to a process that just started, as to
	// one that was stopped (Woke): a lease that ran out just before may be
	// a live worker's that an outage kept from its renewal.
	if now.After(n.troubleAt) {
		n.troubleAt = now
	}
	n.step(ctx, now)
	n.Mon.Tick(ctx, now)
}

// step takes the name when due, and starts the supervisor once it is held.
func (n *Node) step(ctx context.Context, now time.Time) {
	if n.holding() || n.name.halted != nil || now.Before(n.name.retryAt) {
		return
	}
	n.takeName(ctx, now)
	if n.holding() && !n.Sup.Stopping() {
		n.Sup.Start(ctx, now)
	}
}

// Tick advances the supervisor (before the name is held: looks at the name
// again), then the monitor. The supervisor's kills come first (Sup.Watch):
// they need no store, and a store call can wait on a lock that a hung
// worker holds until it is killed.
func (n *Node) Tick(ctx context.Context, now time.Time) {
	if n.troubled {
		n.troubled = false
		if now.After(n.troubleAt) {
			n.troubleAt = now
		}
	}
	if n.holding() {
		n.Sup.Watch(now)
		n.renewName(ctx, now)
		n.Sup.Tick(ctx, now)
	} else if n.started {
		n.step(ctx, now)
	}
	n.Mon.Tick(ctx, now)
}

// Woke tells the node that the main process did not run for a while: it
// last ran at since, was to run again by asked, and did not until now
// (since ≤ asked ≤ now; the driver's stall clock: a goroutine marks it
// every GraceAfter/2, the loop at every turn, wherever the loop was,
// so now − asked is never more than the time lost and now − since never
// less; the simulator knows the exact start and passes it as both). A loop
// held up by its own store call is no stall: the goroutine, like the pipe
// readers, runs on meanwhile. What the stall spares, each counted on the
// side that can only leave a worker less:
//
//   - Late by LateAfter or more (now − asked), the process was stopped or
//     starved of CPU and read no frame meanwhile; its workers' death rules
//     do not count that time (Supervisor.Discount).
//   - Health it did not see is not counted toward healthy_reset and the
//     lifetime reset, however short the stall (now − asked;
//     Supervisor.DiscountHealth, part of Discount).
//   - Nor could it see the store: the leases that ran out meanwhile may be
//     those of workers that could not renew them (a store outage, or a lock
//     held by a stopped worker, which this process, stopped itself, never
//     met). So a stall of GraceAfter or more (now − since) counts as a
//     store failure at its end for the cleanup's grace: no lease is expired
//     for a lease_ttl after it (cleanup).
func (n *Node) Woke(since, asked, now time.Time) {
	if now.Sub(since) >= n.GraceAfter() && now.After(n.troubleAt) {
		n.troubleAt = now
	}
	late := now.Sub(asked)
	if late <= 0 {
		return
	}
	if late >= n.LateAfter() {
		n.Sup.Discount(late, now)
	} else {
		n.Sup.DiscountHealth(late, now)
	}
}

// LateAfter is how late the loop must wake for Woke to discount the time:
// a quarter of hang_after, and at least a check_interval. Shorter delays
// are mostly the scheduler's and the timers' own; leaving them out keeps a
// loaded machine's timings those of the rules. They cannot make a worker
// look hung as long as frame_interval + LateAfter + check_interval stays
// under hang_after (with the defaults 5 s + 7.5 s + 1 s against 30 s);
// settings closer than that leave a shorter stop counted.
func (n *Node) LateAfter() time.Duration {
	return max(n.cfg.Monitor.CheckInterval, n.cfg.Supervisor.HangAfter/4)
}

// GraceAfter is how long a stall must be for Woke to grant the cleanup's
// grace: LateAfter, and at most a third of lease_ttl. A lease runs out only
// after its owner's renewals failed for two thirds of lease_ttl, and this
// process calls the store at least every lease_ttl/3 (it renews its node
// name), so an outage that long meets one of its calls, and counts as a
// failure, unless the process was stopped for about a third of lease_ttl
// or more. With the defaults: 7.5 s.
//
// It is the shortest stall the node acts on beyond the health clock (it is
// at most LateAfter): the driver's stall clock marks every half of it, so
// it records every stop at least this long, and its since (the last mark)
// is no later than the stop's start.
func (n *Node) GraceAfter() time.Duration {
	return min(n.LateAfter(), n.cfg.Supervisor.LeaseTTL/3)
}

// Status is the owner status of docs/design.md §4 (the supervisor's), except that
// while the node cannot read or take its name because the store fails, its
// workers, which cannot be started, are unhealthy rather than pending.
func (n *Node) Status(id string, now time.Time) health.Status {
	if !n.holding() && n.name.storeDown {
		return health.Unhealthy
	}
	return n.Sup.Status(id, now)
}

// NextWake returns the next time the node has something to do.
func (n *Node) NextWake() time.Time {
	t := n.Mon.NextWake()
	if !n.holding() {
		if n.name.halted == nil && n.started && n.name.retryAt.Before(t) {
			t = n.name.retryAt
		}
		return t
	}
	if n.name.halted == nil && n.name.renewAt.Before(t) {
		t = n.name.renewAt
	}
	if d, ok := n.Sup.Deadline(); ok && d.Before(t) {
		t = d
	}
	return t
}

// MinStoreCallBound is the least time StoreCallDeadline leaves the store
// calls of a main-loop turn, even when a worker's death is already due
// (its kill comes with the next tick, after the events being handled).
const MinStoreCallBound = time.Second

// StoreCallDeadline is when the store calls of the main-loop turn that
// begins at now must give up, if they have not answered: the next moment
// the supervisor may have to kill a worker (Supervisor.WatchDeadline), but
// at least MinStoreCallBound away. A store call must not hold a kill up:
// a worker stopped inside a write transaction holds the store's lock,
// every store call waits on it (SQLite's busy timeout, retried tick after
// tick), and only its kill frees the lock. A call cut short fails as a
// store error and is retried as any other. ok is false when no kill can
// come (the calls are bounded by their own timeouts only).
func (n *Node) StoreCallDeadline(now time.Time) (time.Time, bool) {
	d, ok := n.Sup.WatchDeadline()
	if !ok {
		return time.Time{}, false
	}
	if floor := now.Add(MinStoreCallBound); d.Before(floor) {
		d = floor
	}
	return d, true
}

// LeaseExpiredReason is the reason of a lease_expired event whose claim's
// lease ran out (its owner stopped renewing it: dead, or cut off), as
// opposed to one whose file is no longer work.
const LeaseExpiredReason = "lease expired"

// Causes of the lease_expired events of the claim cleanup
// (event.Event.Cause): the claim's lease ran out (LeaseExpiredReason), or
// its file is no longer work (tagged, failed, not valid or gone).
const (
	CleanupLeaseExpired = "lease_expired"
	CleanupNotWork      = "not_work"
)

// ClaimCauses returns the cause of every claim a main process removes, in
// a fixed order: a dead worker's (supervisor.ReleaseDied) and the claim
// cleanup's; a new slice each call.
func ClaimCauses() []string {
	return []string{supervisor.ReleaseDied, CleanupLeaseExpired, CleanupNotWork}
}

// cleanup deletes claims whose lease expired or whose file is no longer work.
//
// Leases are not expired while the store has lately been failing for this
// main process, nor for a whole lease_ttl after its last failure, its
// start or a stall (it could not see the store before or meanwhile: Start,
// Woke): an outage that stops this process's renewals stops every other
// owner's too, and a lease that ran out meanwhile may belong to a worker
// that is alive and still on its job; its owner renews it within
// lease_ttl/3 of the store's return. Expiring it first would hand the file
// to a second worker while the first still works on it. Claims whose file
// is no longer work are removed all the same; a truly abandoned lease is
// removed by the first cleanup after the grace.
func (n *Node) cleanup(ctx context.Context, now time.Time) error {
	expiredBefore := now
	if !n.troubleAt.IsZero() && now.Sub(n.troubleAt) < n.cfg.Supervisor.LeaseTTL {
		expiredBefore = time.Time{} // no lease counts as expired
	}
	// An error may come with claims deleted all the same (a failure after
	// the deletes committed): they are reported either way.
	removed, err := n.store.CleanupClaims(ctx, expiredBefore)
	for _, c := range removed {
		cause, why := CleanupNotWork, "file no longer work" // tagged, failed, not valid or gone
		if c.LeaseUntil.Before(expiredBefore) {
			cause, why = CleanupLeaseExpired, LeaseExpiredReason
		}
		n.sink.Emit(event.Event{T: now, Event: event.LeaseExpired, Instance: n.cfg.Supervisor.Instance, File: c.FileKey, Worker: c.WorkerID,
			Reason: why, Cause: cause})
	}
	if err != nil {
		return fmt.Errorf("cleanup claims: %w", err)
	}
	return nil
}

// pruneHistory deletes health history older than the retention. Rows are
// stamped with the wall clock of the instance that wrote them; an instance
// whose clock is ahead deletes a little early, which the retention dwarfs.
func (n *Node) pruneHistory(ctx context.Context, now time.Time) error {
	if _, err := n.store.PruneHistory(ctx, now.Add(-n.cfg.HistoryRetention)); err != nil {
		return fmt.Errorf("prune history: %w", err)
	}
	return nil
}

// Reset clears a component's failure and counters and resumes polling it;
// ErrNameNotHeld before the node holds its name.
func (n *Node) Reset(ctx context.Context, id string, now time.Time) error {
	if !n.holding() { // restart state is another holder's until the name is this node's
		return ErrNameNotHeld
	}
	if err := n.Sup.Reset(ctx, id, now); err != nil {
		return err
	}
	n.Mon.Resume(id)
	return nil
}

// SetEnabled pauses (false) or resumes (true) every worker sharing the store.
func (n *Node) SetEnabled(ctx context.Context, enabled bool) error {
	if err := n.store.SetMeta(ctx, store.MetaWorkerEnabled, strconv.FormatBool(enabled)); err != nil {
		return fmt.Errorf("set %s: %w", store.MetaWorkerEnabled, err)
	}
	return nil
}

// GPUProbed records the result of one GPU probe in this host's
// `gpu:health:<node>` (store.GPUHealthKey). A failed write is reported;
// workers treat a stale value as unavailable.
func (n *Node) GPUProbed(ctx context.Context, now time.Time, ok bool, reason string) error {
	h := gpu.Health{OK: ok, AtMs: now.UnixMilli(), Reason: reason}
	key := store.GPUHealthKey(n.cfg.Supervisor.Node)
	if err := n.store.SetMeta(ctx, key, h.Encode()); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// Stop begins a graceful stop.
func (n *Node) Stop(now time.Time) { n.Sup.Stop(now) }
