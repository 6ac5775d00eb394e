package driver

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// stallClock notices the time the main process did not run (stopped:
// Ctrl-Z, a debugger; or starved of CPU), wherever its loop was then:
// waiting for its next wake, or inside a store call. A goroutine marks it
// every period; the loop marks it at every turn, before it looks at its
// workers. A mark that comes well after the next one was due (by half a
// period or more) records a stall, from when that mark was due until now:
// the process was to run by then and did not. A tick a little late (the
// scheduler's and the timers' own delay, which a ticker's fixed phase
// shows on about every other tick) is none, so a long turn of the loop,
// with the goroutine marking on meanwhile, adds up to nothing. Whoever
// runs first after a stall records it, so the loop sees it even when its
// own timer or store call returns before the goroutine is scheduled. What
// counts as a stall, and what it spares, the node decides (node.Woke).
//
// Invariant: a stall recorded is never longer than the time between the
// last mark before it and the first after it.
type stallClock struct {
	period time.Duration

	mu     sync.Mutex
	last   time.Time // the last mark
	stalls []stall   // recorded, not yet taken, oldest first
}

// stall is one interval the process did not run: it last ran at since
// (its last mark), was due to mark again at asked, and did at at. at −
// asked is never more than the time lost, at − since never less.
type stall struct{ since, asked, at time.Time }

// maxStalls bounds the stalls kept between two takes (the loop takes them
// at every turn); beyond it the oldest is dropped. Merging two would count
// the time the process ran between them; dropping one counts less than
// was lost, which only leaves a worker less time.
const maxStalls = 16

func newStallClock(period time.Duration, now time.Time) *stallClock {
	return &stallClock{period: max(period, time.Millisecond), last: now}
}

// mark records that the process runs at now.
func (s *stallClock) mark(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if due := s.last.Add(s.period); now.Sub(due) >= s.period/2 {
		if len(s.stalls) == maxStalls {
			s.stalls = s.stalls[1:]
		}
		s.stalls = append(s.stalls, stall{since: s.last, asked: due, at: now})
	}
	if now.After(s.last) {
		s.last = now
	}
}

// take marks now and returns the stalls recorded since the last take,
// oldest first.
func (s *stallClock) take(now time.Time) []stall {
	s.mark(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stalls
	s.stalls = nil
	return out
}

// run marks the clock every period until ctx ends.
func (s *stallClock) run(ctx context.Context, clk clock.Clock) {
	t := clk.Ticker(s.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mark(clk.Now())
		}
	}
}
