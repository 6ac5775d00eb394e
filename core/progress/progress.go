// Package progress decides serve's periodic progress line from the library
// counts it reads at each look: whether a line is due and what it says.
// The caller keeps the ticker, the read and the logger; time enters only
// through the now arguments.
package progress

import (
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Log decides the progress lines, one look at a time. The zero Log has
// seen no look. A look whose read failed is not observed: it leaves the
// previous look in place.
//
// Invariants:
//   - Until the first line, a line is due only when files are pending or
//     in progress: a library idle from the start logs nothing.
//   - After it, a line is due exactly when the counts differ from those of
//     the last line: counts that do not move log nothing, busy or idle
//     (workers paused, re-tagging held back, every worker failed), so a
//     daemon left so for weeks does not fill its log.
//   - PerMinute is the files tagged since the previous look observed, over
//     the time that really passed since it (a failed read between them
//     makes it span two intervals, not one), rounded to one decimal and
//     never negative (files that left the store meanwhile tell no rate).
type Log struct {
	line *store.Counts // the counts of the last line; nil: none yet
	prev *store.Counts // the counts of the previous look; nil: none yet
	at   time.Time     // when prev was read
}

// Line is what one progress line says.
type Line struct {
	Counts    store.Counts
	PerMinute float64 // files tagged per minute since the previous look
	HasRate   bool    // PerMinute is known: there was a previous look, earlier than this one
}

// Observe takes the counts c read at now and says whether a line is due,
// and which.
func (l *Log) Observe(c store.Counts, now time.Time) (Line, bool) {
	prev, at := l.prev, l.at
	l.prev, l.at = &c, now
	switch {
	case l.line == nil && c.Pending == 0 && c.Claimed == 0: // idle from the start
		return Line{}, false
	case l.line != nil && *l.line == c: // nothing moved since the last line
		return Line{}, false
	}
	l.line = &c
	line := Line{Counts: c}
	if elapsed := now.Sub(at); prev != nil && elapsed > 0 {
		rate := float64(c.Tagged-prev.Tagged) / elapsed.Minutes()
		if rate < 0 { // files left the store meanwhile (forget): no rate to tell
			rate = 0
		}
		line.PerMinute, line.HasRate = float64(int(rate*10+0.5))/10, true
	}
	return line, true
}

// Attrs are the line's attributes for the `progress` log line: tagged,
// pending, in_progress (the claims held, pending files among them),
// failed, total and, when known, per_minute.
func (l Line) Attrs() []any {
	c := l.Counts
	attrs := []any{"tagged", c.Tagged, "pending", c.Pending, "in_progress", c.Claimed, "failed", c.Failed, "total", c.Total}
	if l.HasRate {
		attrs = append(attrs, "per_minute", l.PerMinute)
	}
	return attrs
}
