// Package storehealth decides what the main process's own store calls say
// of the store: which failed calls count as a store fault, and when its
// writes are failing (a store can answer reads and take no write: another
// process holding the SQLite write lock, a full disk). Watch is a pure
// state machine: the driver classifies each call (Classify), hands it in
// with the time, and keeps the lock that makes it safe for concurrent use;
// nothing here reads a clock.
package storehealth

import (
	"maps"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Health is what the main process's own store calls said of the store so
// far: every call its node makes (the claim releases, lease renewals and
// cleanups, restart states, the node name, the pause flag, the health
// history), not the API's reads nor the workers' calls (other processes).
type Health struct {
	Errors        map[string]int64 // by operation (snake_case method name); never nil
	WritesFailing *WriteFailure    // nil: the last write noted was taken, or none failed
	// Corrupt is the first call that found the database damaged
	// (store.IsCorrupt); nil while none did. Damage is no outage: no
	// retry mends it, so it stays set for the life of the process.
	Corrupt *Corruption
}

// Corruption is the first store call of the main process that found the
// database damaged.
type Corruption struct {
	Since time.Time
	Op    string
	Err   string // says how to repair the file (the adapter's message)
}

// WriteFailure is a run of failed store writes of the main process.
type WriteFailure struct {
	Since time.Time // the first failed write of the run
	Op    string    // the last failed write's operation
	Err   string    // and its error
}

// Watch keeps a Health from the calls noted in it. The zero Watch has seen
// no call. It is not safe for concurrent use: its owner serializes calls.
//
// Invariants:
//   - Errors counts, by operation, the calls noted as a Fault, reads and
//     writes alike; nothing else changes it, and it never decreases.
//   - WritesFailing is set exactly while the last write noted as a Fault or
//     Answered was a Fault: Since is the time of the first write of that
//     run of failed writes, Op and Err are the last one's.
//   - A write Answered (even with a semantic error such as a lost race)
//     clears it. Reads leave it alone: while another process holds the
//     SQLite write lock or the disk is full, reads still succeed and
//     writes do not.
//   - A call whose caller GaveUp says nothing of the store: it is neither
//     counted nor setting nor clearing anything.
//   - Corrupt is set by the first Fault whose error is store.IsCorrupt,
//     read or write (or the first such error handed to Damaged), and
//     never changes after: a damaged file stays
//     damaged whatever later calls answer (they may read pages the damage
//     missed).
type Watch struct {
	errs    map[string]int64
	failing *WriteFailure
	corrupt *Corruption
}

// Note records one call of op that ended at now with outcome o (err: its
// error, named in WritesFailing when o is a Fault); write: the call changes
// the store.
func (w *Watch) Note(op string, write bool, o Outcome, err error, now time.Time) {
	switch o {
	case GaveUp:
		return
	case Fault:
		if w.errs == nil {
			w.errs = map[string]int64{}
		}
		w.errs[op]++
		w.Damaged(op, err, now)
	}
	switch {
	case !write:
	case o != Fault:
		w.failing = nil
	case w.failing == nil:
		w.failing = &WriteFailure{Since: now, Op: op, Err: errText(err)}
	default:
		w.failing.Op, w.failing.Err = op, errText(err)
	}
}

// Damaged records a call outside the main process's own (the API's
// reads) whose error err says the database is damaged: it sets Corrupt as
// a noted call would, and changes nothing else. Any other err is ignored.
func (w *Watch) Damaged(op string, err error, now time.Time) {
	if w.corrupt == nil && store.IsCorrupt(err) {
		w.corrupt = &Corruption{Since: now, Op: op, Err: errText(err)}
	}
}

// Health is a copy of the state now: later notes do not change it.
func (w *Watch) Health() Health {
	h := Health{Errors: maps.Clone(w.errs)}
	if h.Errors == nil {
		h.Errors = map[string]int64{}
	}
	if w.failing != nil {
		f := *w.failing
		h.WritesFailing = &f
	}
	if w.corrupt != nil {
		c := *w.corrupt
		h.Corrupt = &c
	}
	return h
}

// errText is err's message, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
