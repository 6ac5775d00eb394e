package sim

import "time"

// A main process can stop while its workers run on: fault `{main: hang,
// for: D}` (SIGSTOP, then SIGCONT D later; Ctrl-Z on `nomarr tag` stops
// the main process alone, since its workers run in their own process
// group). Nothing of its loop runs meanwhile: the frames, exits and ticks
// that come wait (storelock.go's queue). When it continues, the loop first
// tells the node how long it did not run (node.Woke, as the production
// loop does at every turn), then ticks, then handles what waited: a stopped process's
// pipe readers were stopped too, so the tick may well come before the
// frames they have yet to read, and that is the order that must not kill.
// Its workers' store calls go on (they are other processes).

// hangMain stops the main process's loop for d from now.
func (in *Instance) hangMain(d time.Duration) {
	if !in.alive {
		return
	}
	l := &in.loop
	if l.asked.IsZero() {
		// The process was to run on from now, wherever its loop was
		// (waiting for its wake, or inside a store call): the production
		// loop's stall clock marks it every GraceAfter/2 (driver/stall.go),
		// so a stop is seen whatever the loop was doing; the simulator
		// takes the exact start.
		l.asked = in.w.now
	}
	if until := in.w.now.Add(d); until.After(l.stopped) {
		l.stopped = until
	}
	in.resumeLater()
}

// continueMain is the first turn of a loop whose process continues: Woke,
// then the tick, if one came meanwhile. It reports whether the loop is
// held up again (a store call of the tick on a held lock).
func (in *Instance) continueMain() bool {
	l := &in.loop
	asked := l.asked
	l.asked = time.Time{}
	if !in.alive {
		return false
	}
	if in.w.check != nil {
		in.w.check.onHeal(in.Name) // its workers' leases are renewed from now on
	}
	if in.w.check != nil {
		in.w.check.onStop(in.ID, asked, in.w.now)
	}
	in.node.Woke(asked, asked, in.w.now)
	if l.tickWaiting {
		l.tickWaiting = false
		in.turn(in.tickNow)
	}
	if in.w.now.Before(l.heldUntil()) {
		in.resumeLater()
		return true
	}
	return false
}

// mainStopped reports whether the live main process of host is stopped now.
func (w *World) mainStopped(host string) bool {
	for _, in := range w.Instances {
		if in.Name == host && in.alive && w.now.Before(in.loop.stopped) {
			return true
		}
	}
	return false
}
