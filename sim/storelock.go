package sim

import (
	"fmt"
	"time"
)

// A worker can stop (SIGSTOP, a debugger, a frozen VM page) inside a write
// transaction: fault `{hang: COMPONENT, holds_lock: true}`. It then holds
// the store's write lock until it dies, as a SQLite connection does, and
// every store call waits on that lock: a main process's call waits until
// LockWait (SQLite's busy timeout) has passed, or until the turn's bound
// (node.StoreCallDeadline) comes first, then fails; its main loop does
// nothing else meanwhile: the frames and exits that come in wait, and are
// handled, in order, once the call is over, before the next tick (as the
// production loop drains its events before ticking). A worker's store call
// fails at once, a simplification: a real one waits too, and its frame
// writer goes on. The lock is freed when the holder dies.
//
// Without this fault nothing waits, and the loop turns are the events
// themselves; so every other scenario runs exactly as before it.

// LockWait is how long a store call waits on a held lock before it fails:
// SQLite's busy timeout (adapters/sqlite.DefaultBusyTimeout).
const LockWait = 5 * time.Second

// takeLock makes p the holder of the store's write lock.
func (w *World) takeLock(p *Process) { w.lockHolder = p }

// dropLock frees the lock if p, now dead, held it. A store call waiting on
// it ends now (it has already failed: a real one might still succeed), and
// its loop goes on.
func (w *World) dropLock(p *Process) {
	if w.lockHolder != p {
		return
	}
	w.lockHolder = nil
	for _, in := range w.Instances {
		if in.loop.busyUntil.After(w.now) {
			in.loop.busyUntil = w.now
			in.resumeLater()
		}
	}
}

// locked is the error of a store call made while the lock is held; a call
// from a main process's loop first waits (loop.wait).
func (h hostStore) locked() error {
	if h.w.lockHolder == nil {
		return nil
	}
	if h.main == nil {
		return fmt.Errorf("memstore: database is locked by %s", h.w.lockHolder.comp)
	}
	waited := h.main.loop.wait(h.w.now)
	return fmt.Errorf("memstore: database is locked by %s (waited %s)", h.w.lockHolder.comp, waited)
}

// loopTurns is the state of a main process's loop while store calls hold
// it up.
type loopTurns struct {
	busyUntil   time.Time // the loop is inside a store call until then
	stopped     time.Time // the main process is stopped until then (mainhang.go)
	asked       time.Time // when the stopped loop meant to run; zero: not stopped
	bound       time.Time // the current turn's store calls give up then (zero: no bound)
	queue       []func()  // entries that came while busy, in order
	tickWaiting bool      // a tick came while busy
	resumeAt    time.Time // a resume is scheduled then (zero: none)
}

// wait is one store call of the current turn on a held lock: it begins
// when the calls before it in the turn ended, and lasts LockWait or until
// the turn's bound. It returns how long it waited.
func (l *loopTurns) wait(now time.Time) time.Duration {
	start := now
	if l.busyUntil.After(start) {
		start = l.busyUntil
	}
	end := start.Add(LockWait)
	if !l.bound.IsZero() && l.bound.Before(end) {
		end = l.bound
		if end.Before(start) {
			end = start
		}
	}
	l.busyUntil = end
	return end.Sub(start)
}

// busy reports whether the loop is inside a store call, or has entries
// waiting from one.
func (in *Instance) busy() bool {
	l := &in.loop
	return in.w.now.Before(l.heldUntil()) || len(l.queue) > 0 || l.tickWaiting
}

// heldUntil is when the loop can run again: the end of its store call or
// of its process's stop, whichever is later.
func (l *loopTurns) heldUntil() time.Time {
	if l.stopped.After(l.busyUntil) {
		return l.stopped
	}
	return l.busyUntil
}

// turn runs f as one turn of the main loop, with its store calls bounded
// by the node's StoreCallDeadline.
func (in *Instance) turn(f func()) {
	in.loop.bound = time.Time{}
	if in.w.lockHolder != nil {
		if d, ok := in.node.StoreCallDeadline(in.w.now); ok {
			in.loop.bound = d
		}
	}
	f()
	in.resumeLater()
}

// enter runs f on the main loop now, or, while a store call holds the loop
// up, once it is free.
func (in *Instance) enter(f func()) {
	if !in.busy() {
		in.turn(f)
		return
	}
	in.loop.queue = append(in.loop.queue, f)
	in.resumeLater()
}

// pipeData delivers bytes from p's frame pipe to the loop (copied when the
// loop is held up: p reuses its buffer).
func (in *Instance) pipeData(p *Process, b []byte) {
	if !in.busy() {
		in.turn(func() { in.node.Sup.PipeData(p.comp, p.gen, b, in.w.now) })
		return
	}
	b = append([]byte(nil), b...)
	in.enter(func() { in.node.Sup.PipeData(p.comp, p.gen, b, in.w.now) })
}

// enterTick runs a tick, or, while the loop is held up, one tick after the
// entries waiting.
func (in *Instance) enterTick(f func()) {
	if !in.busy() {
		in.turn(f)
		return
	}
	in.loop.tickWaiting = true
	in.resumeLater()
}

// resumeLater schedules the loop's resumption when it is held up.
func (in *Instance) resumeLater() {
	l := &in.loop
	if !in.w.now.Before(l.heldUntil()) && len(l.queue) == 0 && !l.tickWaiting && l.asked.IsZero() {
		return
	}
	at := l.heldUntil()
	if at.Before(in.w.now) {
		at = in.w.now
	}
	if !l.resumeAt.IsZero() && !at.Before(l.resumeAt) {
		return
	}
	l.resumeAt = at
	in.w.at(at, func() {
		if !l.resumeAt.Equal(at) {
			return // rescheduled
		}
		l.resumeAt = time.Time{}
		in.resume()
	})
}

// resume handles what waited, in order, then the tick, as long as no store
// call holds the loop up again.
func (in *Instance) resume() {
	l := &in.loop
	if in.w.now.Before(l.stopped) {
		in.resumeLater()
		return
	}
	if !l.asked.IsZero() && in.continueMain() {
		return
	}
	for len(l.queue) > 0 {
		if in.w.now.Before(l.busyUntil) {
			in.resumeLater()
			return
		}
		f := l.queue[0]
		l.queue = l.queue[1:]
		if in.alive {
			in.turn(f)
		}
	}
	if in.w.now.Before(l.busyUntil) {
		in.resumeLater()
		return
	}
	if l.tickWaiting {
		l.tickWaiting = false
		if in.alive {
			in.tick()
		}
	}
}
