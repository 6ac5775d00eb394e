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
// workers. A mark that comes later than period after the previous one
// (whoever made it) records the stall: the process was to run by then
// and did not. Whoever runs first after the stall records it, so the loop
// sees it even when its own timer or store call returns before the
// goroutine is scheduled. What counts as a stall, and what it spares, the
// node decides (node.Woke).
type stallClock struct {
	period time.Duration

	mu    sync.Mutex
	last  time.Time // the last mark
	asked time.Time // the pending stall's start (when a mark was due); zero: none
	at    time.Time // and its end
}

func newStallClock(period time.Duration, now time.Time) *stallClock {
	return &stallClock{period: period, last: now}
}

// mark records that the process runs at now.
func (s *stallClock) mark(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if due := s.last.Add(s.period); now.After(due) {
		if s.asked.IsZero() {
			s.asked = due
		}
		s.at = now
	}
	if now.After(s.last) {
		s.last = now
	}
}

// take marks now and returns the stall seen since the last take, if any
// (two stalls between takes merge into one).
func (s *stallClock) take(now time.Time) (asked, at time.Time, ok bool) {
	s.mark(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	asked, at, ok = s.asked, s.at, !s.asked.IsZero()
	s.asked, s.at = time.Time{}, time.Time{}
	return asked, at, ok
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
