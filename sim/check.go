package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/sim/memstore"
)

// checker verifies the safety properties after every event. It is a test
// oracle: it watches the trace and the world, and never feeds anything back.
type checker struct {
	w          *World
	violations []string

	holder      map[string]string // file → worker holding its claim, per the trace
	tagged      map[string]int
	failed      map[string]bool // <instance-name>/<component> failed and not reset
	stopping    map[string]bool // instance id → stop requested
	lastBack    map[string]int64
	restarts    map[string][]int64 // restart_scheduled times per node/component
	deaths      []death
	storeFaults int64 // injected store failures seen so far
	faultAt     time.Time
	seen        map[string]bool // instance ids seen in the trace
	mainUp      bool            // some main process was alive after the last event
	mainUpAt    time.Time       // since when some main process has been alive
}

type death struct {
	workerID string
	at       time.Time
}

func newChecker(w *World) *checker {
	return &checker{w: w, holder: map[string]string{}, tagged: map[string]int{}, failed: map[string]bool{},
		stopping: map[string]bool{}, lastBack: map[string]int64{}, restarts: map[string][]int64{}, seen: map[string]bool{}}
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
		}
		c.holder[e.File] = e.Worker
	case event.Tagged:
		c.tagged[e.File]++
		if c.tagged[e.File] > 1 {
			c.violate("file %s tagged twice", e.File)
		}
		if c.w.Store.TagWrites[e.File] > 1 {
			c.violate("file %s completed twice in the store", e.File)
		}
		delete(c.holder, e.File)
	case event.FileFailed, event.FileRetry, event.Release, event.LeaseExpired:
		if e.File != "" && (e.Worker == "" || c.holder[e.File] == e.Worker) {
			delete(c.holder, e.File)
		}
	case event.Stop:
		c.stopping[e.Instance] = true
	case event.RestartScheduled:
		k := nodeKey(e.Instance, e.Component)
		if c.stopping[e.Instance] {
			c.violate("restart of %s scheduled while stopping", e.Component)
		}
		if c.failed[k] {
			c.violate("restart of failed %s scheduled", k)
		}
		rc := cfg.Restart()
		want := rc.BackoffBase.Milliseconds()
		if prev := c.lastBack[k]; prev > 0 {
			want = min(prev*2, rc.BackoffMax.Milliseconds())
		}
		if e.BackoffMs != want {
			c.violate("%s backoff %d ms, want %d ms", k, e.BackoffMs, want)
		}
		c.lastBack[k] = e.BackoffMs
		if e.RestartCount > rc.LifetimeLimit {
			c.violate("%s restart_count %d over the lifetime limit", k, e.RestartCount)
		}
		win := append(c.restarts[k], r.TMs)
		cut := r.TMs - rc.Window.Milliseconds()
		for len(win) > 0 && win[0] <= cut {
			win = win[1:]
		}
		c.restarts[k] = win
		if len(win) > rc.WindowLimit {
			c.violate("%s: %d restarts within %s", k, len(win), rc.Window)
		}
	case event.BackoffReset:
		c.lastBack[nodeKey(e.Instance, e.Component)] = 0
	case event.Reset:
		k := nodeKey(e.Instance, e.Component)
		c.lastBack[k] = 0
		c.failed[k] = false
		c.restarts[k] = nil
	case event.Failed:
		c.failed[nodeKey(e.Instance, e.Component)] = true
	case event.Spawn, event.Restart:
		if c.failed[nodeKey(e.Instance, e.Component)] {
			c.violate("failed %s spawned without a reset", e.Component)
		}
		if c.stopping[e.Instance] {
			c.violate("%s spawned while stopping", e.Component)
		}
	case event.Kill:
		c.checkKill(e)
	case event.WorkerExit:
		if e.Component != "" {
			if in := c.instance(e.Instance); in != nil {
				c.deaths = append(c.deaths, death{workerID: in.node.Sup.WorkerID(e.Component), at: c.w.now})
			}
		}
	}
}

// resync starts the oracle for a new main process from the restart state it
// loads from the store: what a crashed main never managed to save is lost to
// its successor too, by design.
func (c *checker) resync(instanceID string) {
	in := c.instance(instanceID)
	if in == nil {
		return
	}
	rc := c.w.cfg.Restart()
	for _, comp := range in.node.Sup.Components() {
		k := nodeKey(instanceID, comp)
		st, ok := c.w.Store.RestartState(k)
		if !ok {
			c.failed[k], c.lastBack[k], c.restarts[k] = false, 0, nil
			continue
		}
		c.failed[k] = st.Failed()
		c.lastBack[k] = 0
		if st.Consecutive > 0 {
			c.lastBack[k] = rc.Backoff(st.Consecutive - 1).Milliseconds()
		}
		var win []int64
		for _, ms := range st.Recent {
			win = append(win, ms-c.w.start.UnixMilli())
		}
		c.restarts[k] = win
	}
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

// afterEvent checks state-based properties.
func (c *checker) afterEvent() {
	w := c.w
	for _, in := range w.Instances {
		for _, id := range in.node.Sup.Components() {
			if n := in.node.Sup.PendingTimers(id); n > 1 {
				c.violate("%s has %d pending restart timers", id, n)
			}
		}
	}
	if w.Store.CurrentFault() != memstore.Healthy || w.Store.Faults != c.storeFaults {
		c.faultAt = w.now // the store is down, or an operation just failed by injection
	}
	c.storeFaults = w.Store.Faults
	// A dead worker's claims are released within lease_ttl + cleanup period
	// (plus one check interval) of its death, or of a main process being
	// there to do it, when the store stayed up meanwhile.
	up := false
	for _, in := range w.Instances {
		up = up || in.alive
	}
	if up && !c.mainUp {
		c.mainUpAt = w.now
	}
	c.mainUp = up
	limit := w.cfg.LeaseTTL + w.cfg.CleanupPeriod + w.cfg.CheckInterval
	keep := c.deaths[:0]
	for _, d := range c.deaths {
		from := d.at
		if c.mainUpAt.After(from) {
			from = c.mainUpAt
		}
		if !up || w.now.Sub(from) <= limit {
			keep = append(keep, d)
			continue
		}
		if !c.faultAt.IsZero() && !c.faultAt.Before(d.at) {
			continue // the store failed meanwhile; the bound does not apply
		}
		for _, cl := range w.Store.Claims() {
			if cl.WorkerID == d.workerID && !cl.ClaimedAt.After(d.at) {
				c.violate("claim on %s of dead %s not released %s after its death", cl.FileKey, d.workerID, w.now.Sub(d.at))
			}
		}
	}
	c.deaths = keep
}

func (c *checker) final() {
	for f, n := range c.w.Store.TagWrites {
		if n > 1 {
			c.violate("file %s completed %d times", f, n)
		}
	}
}
