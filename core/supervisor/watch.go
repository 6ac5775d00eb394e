package supervisor

import (
	"fmt"
	"time"
)

// Death detection (docs/design.md §4): the rules that declare a live worker dead,
// applied by Watch, and the earliest moment they can next apply
// (WatchDeadline), so that a driver never lets a store call hold a kill up.

// Watch applies the death rules of docs/design.md §4 and the stop grace to every
// live worker, and kills those whose time is up. It makes no store call,
// and Tick runs it before any: a store call may wait (SQLite's busy timeout)
// on a write lock that a hung worker holds, and the kill is what frees that
// lock, so the kill must not queue behind the wait. A node calls it before
// its own store writes too (node.Tick).
func (s *Supervisor) Watch(now time.Time) {
	if !s.started {
		return
	}
	for _, c := range s.comps {
		if !c.running || c.killing {
			continue
		}
		if s.stopping {
			if now.Sub(s.stopAt) >= s.cfg.StopGrace {
				s.kill(now, c, KillStopGrace, "stop grace expired")
			}
		} else if cause, why := s.deathReason(c, now); why != "" {
			s.kill(now, c, cause, why)
		}
	}
}

// deathRule is one rule of docs/design.md §4 as it stands for one live worker: the
// worker is dead once after has passed since from. A zero from means the
// rule does not apply (no pipe closed, no job in progress, …). Both Watch
// (through deathReason) and WatchDeadline (through deathDue) read the rules
// from deathRules alone, so the deadline a driver is given is always the
// moment of the kill.
type deathRule struct {
	kind  deathKind
	from  time.Time
	after time.Duration
}

type deathKind uint8

const (
	pipeClosed deathKind = iota
	noFirstFrame
	hung
	coldStart
	stalled
)

// deathRules puts the rules that apply to c into rules and returns how
// many, in the order their reasons are reported when several fire together
// (no allocation: Watch runs it for every worker at every tick). A worker without a first frame
// is judged by its startup time only (and a closed pipe); after it, by the
// age of its last frame, the length of its cold start and its job's progress.
func (s *Supervisor) deathRules(c *component, rules *[4]deathRule) (n int) {
	if !c.pipeClosedAt.IsZero() {
		rules[n] = deathRule{pipeClosed, c.pipeClosedAt, s.cfg.PipeCloseGrace}
		n++
	}
	if !c.hasFrame {
		rules[n] = deathRule{noFirstFrame, c.spawnedAt, s.cfg.StartupTimeout}
		return n + 1
	}
	rules[n] = deathRule{hung, c.lastFrameAt, s.cfg.HangAfter}
	n++
	if !c.pendingSince.IsZero() {
		rules[n] = deathRule{coldStart, c.pendingSince, s.cfg.ColdStartMax}
		n++
	}
	if !c.progressAt.IsZero() {
		rules[n] = deathRule{stalled, c.progressAt, s.cfg.StallAfter}
		n++
	}
	return n
}

// deathReason is why a live worker is dead at now, its kill cause (cause.go)
// and the reason for people, or "", "" while no rule fires.
func (s *Supervisor) deathReason(c *component, now time.Time) (cause, why string) {
	var rules [4]deathRule
	for _, r := range rules[:s.deathRules(c, &rules)] {
		if now.Sub(r.from) < r.after {
			continue
		}
		switch r.kind {
		case pipeClosed:
			return KillPipeClosed, "frame pipe closed"
		case noFirstFrame:
			return KillStartupTimeout, fmt.Sprintf("no first frame within startup_timeout (%s)", s.cfg.StartupTimeout)
		case hung:
			return KillHang, fmt.Sprintf("hang: no frame for %s", now.Sub(r.from).Round(time.Second))
		case coldStart:
			return KillColdStart, fmt.Sprintf("cold start longer than cold_start_max (%s)", s.cfg.ColdStartMax)
		case stalled:
			return KillStall, fmt.Sprintf("stall: job %s made no progress for %s", c.job, now.Sub(r.from).Round(time.Second))
		}
	}
	return "", ""
}

// WatchDeadline returns the earliest time at which Watch would kill a live
// worker on the facts it has now (last frame, progress, spawn, pipe close,
// stop). A driver bounds its store calls by it: a call that waits on a
// lock past it would hold up the kill that may be what frees the lock (a
// worker stopped inside a write transaction). Frames that arrive meanwhile
// only push the real deadline later, so it is never late. ok is false when
// no live worker can be killed by the rules (none is running, or every one
// is already being killed).
func (s *Supervisor) WatchDeadline() (t time.Time, ok bool) {
	if !s.started {
		return t, false
	}
	for _, c := range s.comps {
		if !c.running || c.killing {
			continue
		}
		d := s.deathDue(c)
		if !ok || d.Before(t) {
			t, ok = d, true
		}
	}
	return t, ok
}

// deathDue is when Watch first kills c, a live worker not being killed, on
// the facts known now: the stop grace's end while stopping, else the
// earliest moment one of its death rules fires.
func (s *Supervisor) deathDue(c *component) time.Time {
	if s.stopping {
		return s.stopAt.Add(s.cfg.StopGrace)
	}
	var rules [4]deathRule
	var t time.Time
	for i, r := range rules[:s.deathRules(c, &rules)] {
		if d := r.from.Add(r.after); i == 0 || d.Before(t) {
			t = d
		}
	}
	return t
}
