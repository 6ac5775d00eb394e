package supervisor

import (
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// Time the main process did not run. A main process that is stopped
// (Ctrl-Z on `nomarr tag` stops it alone: its workers run in their own
// process group; a debugger; a VM whose vCPU was not scheduled) or starved
// of CPU reads no frame meanwhile, though its workers go on framing into
// their pipes. When it runs again, its first Watch would see every live
// worker's last frame, spawn, cold start and progress as old by that time,
// and kill them all as hung before the frames waiting in the pipes are
// read; each kill counts against the restart limits, which outlive the
// app. Discount takes that time off.

// Discount moves every live worker's death-rule clock (last frame, spawn,
// pipe close, cold start, job progress: deathRules) on by lost, the time
// the main process did not run until end (node.Woke measures it), so a
// worker is judged on the time the main process was there to read it. The
// start of its healthy run moves too: health is counted toward
// healthy_reset and the lifetime reset only while the main process saw it.
// Only clocks set before end move: a worker spawned, or a frame read,
// after the process ran again lost nothing. The stop grace is not
// discounted: it is the workers' time to finish, and they ran.
//
// Invariant: the discount is the time lost, never more. A worker that did
// hang meanwhile is killed once hang_after of the main's running time has
// passed without a frame, so a main process late at every tick cannot
// postpone a kill by more than the time it lost.
func (s *Supervisor) Discount(lost time.Duration, end time.Time) {
	if lost <= 0 || !s.started {
		return
	}
	n := 0
	for _, c := range s.comps {
		if c.running && !c.killing {
			c.discount(lost, end)
			n++
		}
	}
	s.sink.Emit(event.Event{T: end, Event: event.MainPaused, Instance: s.cfg.Instance, Count: n,
		Reason: fmt.Sprintf("the main process did not run for %s (stopped, or starved of CPU): not counted against its workers", lost)})
}

// DiscountHealth moves the start of every live worker's healthy run on by
// lost, the time the main process did not run until end, when it was too
// short for Discount (node.Woke): health it did not see is not counted
// toward healthy_reset and the lifetime reset. It only delays a reset, and
// emits nothing.
func (s *Supervisor) DiscountHealth(lost time.Duration, end time.Time) {
	if lost <= 0 || !s.started {
		return
	}
	for _, c := range s.comps {
		if c.running && !c.killing {
			moveBefore(&c.healthySince, lost, end)
		}
	}
}

// moveBefore moves *t on by d when it is set and before end.
func moveBefore(t *time.Time, d time.Duration, end time.Time) {
	if !t.IsZero() && t.Before(end) {
		*t = t.Add(d)
	}
}

// discount moves c's death-rule clocks set before end on by d, and the
// start of its healthy run (healthy_reset, the lifetime reset: health the
// main process did not see is not counted for a worker either); a zero
// time (a rule that does not apply) stays zero.
func (c *component) discount(d time.Duration, end time.Time) {
	for _, t := range []*time.Time{&c.spawnedAt, &c.pipeClosedAt, &c.lastFrameAt, &c.progressAt, &c.pendingSince, &c.healthySince} {
		moveBefore(t, d, end)
	}
}
