package supervisor

import (
	"fmt"
	"time"
)

// Death detection (DESIGN §4): the rules that declare a live worker dead,
// applied by Watch, and the earliest moment they can next apply
// (WatchDeadline), so that a driver never lets a store call hold a kill up.

// Watch applies the death rules of DESIGN §4 and the stop grace to every
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
				s.kill(now, c, "stop grace expired")
			}
		} else if why := s.deathReason(c, now); why != "" {
			s.kill(now, c, why)
		}
	}
}

// deathReason applies the death rules of DESIGN §4 to a live process.
func (s *Supervisor) deathReason(c *component, now time.Time) string {
	if !c.pipeClosedAt.IsZero() && now.Sub(c.pipeClosedAt) >= s.cfg.PipeCloseGrace {
		return "frame pipe closed"
	}
	if !c.hasFrame {
		if now.Sub(c.spawnedAt) >= s.cfg.StartupTimeout {
			return fmt.Sprintf("no first frame within startup_timeout (%s)", s.cfg.StartupTimeout)
		}
		return ""
	}
	if age := now.Sub(c.lastFrameAt); age >= s.cfg.HangAfter {
		return fmt.Sprintf("hang: no frame for %s", age)
	}
	if !c.pendingSince.IsZero() && now.Sub(c.pendingSince) >= s.cfg.ColdStartMax {
		return fmt.Sprintf("cold start longer than cold_start_max (%s)", s.cfg.ColdStartMax)
	}
	if !c.progressAt.IsZero() && now.Sub(c.progressAt) >= s.cfg.StallAfter {
		return fmt.Sprintf("stall: job %s made no progress for %s", c.job, now.Sub(c.progressAt))
	}
	return ""
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
// the facts known now: the earliest time at which deathReason (or, while
// stopping, the stop grace) gives a reason.
func (s *Supervisor) deathDue(c *component) time.Time {
	if s.stopping {
		return s.stopAt.Add(s.cfg.StopGrace)
	}
	due := func(from time.Time, after time.Duration, t time.Time) time.Time {
		if d := from.Add(after); !from.IsZero() && d.Before(t) {
			return d
		}
		return t
	}
	if !c.hasFrame {
		return due(c.pipeClosedAt, s.cfg.PipeCloseGrace, c.spawnedAt.Add(s.cfg.StartupTimeout))
	}
	t := c.lastFrameAt.Add(s.cfg.HangAfter)
	t = due(c.pipeClosedAt, s.cfg.PipeCloseGrace, t)
	t = due(c.pendingSince, s.cfg.ColdStartMax, t)
	return due(c.progressAt, s.cfg.StallAfter, t)
}
