// Package pace spaces out a read that is repeated only to be shown to a
// person (the library counts on `nomarr tag`'s progress line and on the
// dashboard), so that its cost stays a small share of the store's time
// however large the library grows.
package pace

import "time"

// Pacer decides when such a read is due.
//
// Invariant: the start of a read is at least max(Floor, Factor × the
// duration of the read before it) after that earlier read's start, so
// reads whose duration exceeds Floor/Factor take at most 1/Factor of the
// time. A read that costs little (SQLite's counts: tens of microseconds)
// is due at every Floor; one that costs a second (a count over a
// collection of a million documents on a server) every Factor seconds.
type Pacer struct {
	Floor  time.Duration // shortest spacing between two reads' starts
	Factor int           // spacing at least Factor × the last read's duration

	started bool
	start   time.Time
	took    time.Duration
}

// Due reports whether a read may start at now. The first read always may.
func (p *Pacer) Due(now time.Time) bool {
	return !p.started || !now.Before(p.Next())
}

// Next is the earliest start of the next read (the zero time before the
// first read).
func (p *Pacer) Next() time.Time {
	if !p.started {
		return time.Time{}
	}
	gap := p.Floor
	if d := p.took * time.Duration(p.Factor); d > gap {
		gap = d
	}
	return p.start.Add(gap)
}

// Read records a read that started at start and ended at end, whether it
// succeeded or not (a failed read cost the store too).
func (p *Pacer) Read(start, end time.Time) {
	p.started, p.start, p.took = true, start, end.Sub(start)
	if p.took < 0 {
		p.took = 0
	}
}
