package sim

import (
	"time"

	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
)

// Progress: an idle worker claims eligible work within idle_poll_max
// (docs/design.md §8: "Idle: adaptive poll 1 s × 1.5 up to 30 s, reset when work
// is found"; §7: a file is eligible when needs_tagging, valid, not failed,
// next_retry_at passed, and no claim exists).
//
// The rule in the code: a worker that looks for work and finds none
// enters idle and waits its current poll, which then grows by
// idle_poll_factor up to idle_poll_max (worker.Step). Every other way into
// idle looks at once: a worker that finishes a job, boots, unloads its
// models, or leaves a backoff or a pause looks in that same instant. A
// look (Step: the pause flag, the GPU preflight, discovery and the claim,
// in one instant with nothing between) claims a file when one is eligible,
// unless the store fails, the cluster is paused, the GPU preflight fails,
// or the worker is leaving.
//
// Property: let a window be a span in which, at every event (the checker
// runs after each), all of these hold:
//
//   - the store holds an eligible file: needs_tagging, valid, not failed,
//     next_retry_at and skip_until passed, no claim (memstore's own rule,
//     read without fault injection);
//   - some worker is ready: its process alive, booted, not stopped
//     (SIGSTOP), neither running a job nor loading models (the simulator's
//     own state), told neither of a stop nor of its main process's death
//     (an orphan claims nothing), its main process alive and not stopping,
//     its phase idle (not backing off, paused, stopping or loading), and,
//     on a GPU host, its host's gpu:health as the preflight reads it says
//     available;
//   - the cluster is not paused (worker_enabled);
//   - no fault since the window began (c.faultAt: the store down or slow
//     or just back, an operation failed by injection or whose answer was
//     lost, any host cut off, a hung worker holding the store's lock).
//
// A window lasts at most idle_poll_max. Each worker ready at its start is
// waiting a poll it began before, at most idle_poll_max long, and looks
// when it ends: it claims, or stops being ready. A worker that becomes
// ready later did so by a look that found nothing, which cannot happen
// while a file is eligible; a file made eligible by time (next_retry_at)
// is seen at the first event after, which only shortens the window seen.
// A poll that grows past idle_poll_max makes an idle worker sleep through
// work that came meanwhile.
type progressWatch struct {
	from    time.Time // the start of the current window (zero: none)
	flagged bool      // the current window was reported
	// The last scan of the store for an eligible file, valid while the
	// store saw no operation since (memstore's Ops) and, when none was
	// found, until the earliest retry or skip time to come.
	scanOps  int64
	scanned  bool
	found    string
	nextTime time.Time
	gpu      map[string]gpuSeen     // host → its gpu:health, decoded
	comps    map[*Instance][]string // main process → its components, in order
}

// progressAfterEvent checks the window; called after c.faultAt is brought
// up to date.
func (c *checker) progressAfterEvent() {
	w, p := c.w, &c.progress
	ready, file := "", ""
	if c.faultAt.Before(w.now) {
		ready = c.readyWorker()
	}
	if ready != "" {
		if v, ok := w.Store.MetaValue(store.MetaWorkerEnabled); store.Enabled(v, ok) {
			file = c.eligibleFile()
		}
	}
	if file == "" {
		p.from, p.flagged = time.Time{}, false
		return
	}
	if p.from.IsZero() || !c.faultAt.Before(p.from) {
		p.from, p.flagged = w.now, false
		return
	}
	if bound := w.cfg.IdlePollMax; !p.flagged && w.now.Sub(p.from) > bound {
		p.flagged = true
		c.violate("no claim for %s: %s idle and %s eligible (cluster enabled, no fault) since %s, want a claim within idle_poll_max %s",
			w.now.Sub(p.from), ready, file, p.from.Sub(w.start), bound)
	}
}

// readyWorker names a worker ready to claim (see progressWatch), or "".
func (c *checker) readyWorker() string { return c.firstIdle(c.w.cfg.GPU) }

// firstIdle names the first worker that steps and shows idle (firstIn).
func (c *checker) firstIdle(needGPU bool) string { return c.firstIn(health.Idle, needGPU) }

// firstIn names the first worker that steps — its process alive, booted,
// not stopped (SIGSTOP), neither running a job nor loading models, not
// told of its main process's death, of a main process alive and not
// stopping — and shows phase, on a host whose GPU preflight passes when
// needGPU, or "".
func (c *checker) firstIn(phase health.Phase, needGPU bool) string {
	for _, in := range c.w.Instances {
		if !in.alive || c.stopping[in.ID] {
			continue
		}
		for _, comp := range c.components(in) {
			p := in.procs[comp]
			if p == nil || !p.alive || p.hung || !p.booted || p.wk == nil || p.busy != free || p.mainDead {
				continue
			}
			if p.wk.Phase() != phase || needGPU && !c.gpuUp(in.Name) {
				continue
			}
			return in.ID + "/" + comp
		}
	}
	return ""
}

// components lists a main process's worker components, in order.
func (c *checker) components(in *Instance) []string {
	comps := c.progress.comps[in]
	if comps == nil {
		comps = in.node.Sup.Components()
		c.progress.comps[in] = comps
	}
	return comps
}

// gpuUp reports whether the GPU preflight of a worker on host passes now:
// gpu.Available on its host's gpu:health, decoded once per value written.
func (c *checker) gpuUp(host string) bool {
	w := c.w
	v, ok := w.Store.MetaValue(store.GPUHealthKey(host))
	if !ok {
		return false
	}
	g, seen := c.progress.gpu[host]
	if !seen || g.value != v {
		g = gpuSeen{value: v}
		if h, err := gpu.Decode(v); err == nil && h.OK {
			g.up, g.until = true, time.UnixMilli(h.AtMs).Add(w.cfg.GPUStaleAfter) // stale once older than gpu_stale_after
		}
		c.progress.gpu[host] = g
	}
	return g.up && !w.now.After(g.until)
}

// gpuSeen is a host's gpu:health value, decoded: available until until.
type gpuSeen struct {
	value string
	up    bool
	until time.Time
}

// eligibleFile names an eligible file in the store now, or "".
func (c *checker) eligibleFile() string {
	w, p := c.w, &c.progress
	if p.found != "" {
		// Still eligible? Then no scan is needed.
		if f, ok := w.Store.Peek(p.found); ok && f.EligibleIgnoringClaims(w.now) {
			if _, claimed := w.Store.ClaimOf(p.found); !claimed {
				return p.found
			}
		}
		p.scanned = false
	}
	if p.scanned && p.scanOps == w.Store.Ops && w.now.Before(p.nextTime) {
		return ""
	}
	p.scanned, p.scanOps, p.found, p.nextTime = true, w.Store.Ops, "", time.Time{}
	w.Store.Each(func(f *store.File) bool {
		if !f.NeedsTagging || !f.IsValid || f.Failed {
			return true
		}
		if _, claimed := w.Store.ClaimOf(f.Key); claimed {
			return true
		}
		if f.EligibleIgnoringClaims(w.now) {
			p.found = f.Key
			return false
		}
		// Eligible once its retry and skip times have passed.
		at := f.NextRetryAt
		if f.SkipUntil.After(at) {
			at = f.SkipUntil
		}
		if p.nextTime.IsZero() || at.Before(p.nextTime) {
			p.nextTime = at
		}
		return true
	})
	if p.found != "" {
		return p.found
	}
	if p.nextTime.IsZero() {
		p.nextTime = w.end.Add(time.Hour) // nothing to wait for: valid until the store changes
	}
	return ""
}
