package driver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/internal/eventually"
)

// The stall clock records a gap between two marks that overran the
// period by half a period or more, from when the next mark was due to the
// mark that ended it, whoever made that mark (its goroutine, or the loop
// taking it first), once. Marks on time record nothing, nor do ticks a
// little late, however many: a long turn of the loop, the goroutine
// marking on meanwhile, is no stall. A stall is never longer than the gap.
func TestStallClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := newStallClock(time.Second, t0)
	for _, d := range []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond, 2700 * time.Millisecond} {
		s.mark(at(d)) // the goroutine, on time
	}
	if st := s.take(at(3 * time.Second)); len(st) != 0 {
		t.Fatalf("stalls %v for marks on time", st)
	}
	// A 20 s turn of the loop inside a store call: the goroutine's ticks
	// each come a little late, on a fixed phase.
	mark := 3 * time.Second
	for range 20 {
		mark += time.Second + 30*time.Millisecond
		s.mark(at(mark))
	}
	if st := s.take(at(mark + 10*time.Millisecond)); len(st) != 0 {
		t.Fatalf("stalls %v over a long turn with the goroutine ticking a little late", st)
	}
	// Stopped from mark to mark+45 s: the loop takes it before the
	// goroutine has marked.
	base := mark + 10*time.Millisecond
	st := s.take(at(base + 45*time.Second))
	if len(st) != 1 || !st[0].asked.Equal(at(base+time.Second)) || !st[0].at.Equal(at(base+45*time.Second)) {
		t.Fatalf("take after a stop = %v; want one stall from %s to %s", st, base+time.Second, base+45*time.Second)
	}
	// Its since is the last mark before the stop: at − since is never
	// less than the 45 s lost (the cleanup's grace), at − asked never more
	// (the discount).
	if !st[0].since.Equal(at(base)) {
		t.Fatalf("stall since %s; want the last mark, %s", st[0].since.Sub(t0), base)
	}
	s.mark(at(base + 45100*time.Millisecond)) // the goroutine's late tick: nothing new
	if st := s.take(at(base + 45200*time.Millisecond)); len(st) != 0 {
		t.Fatalf("one stop reported twice: %v", st)
	}
	// Two stops between takes, the goroutine marking each: two stalls,
	// not one spanning the time between.
	b := base + 45200*time.Millisecond
	s.mark(at(b + 10*time.Second))
	s.mark(at(b + 10500*time.Millisecond))
	s.mark(at(b + 20*time.Second))
	st = s.take(at(b + 20100*time.Millisecond))
	if len(st) != 2 || st[0].at.Sub(st[0].asked) != 9*time.Second || st[1].at.Sub(st[1].asked) != 8500*time.Millisecond {
		t.Fatalf("two stops = %v; want stalls of 9 s and 8.5 s", st)
	}
	// A mark from the past (a clock read before a later one) moves nothing back.
	s.mark(at(b + 19*time.Second))
	if st := s.take(at(b + 20500*time.Millisecond)); len(st) != 0 {
		t.Fatalf("stalls %v after a mark out of order", st)
	}
}

// Past maxStalls between two takes the oldest stall is dropped, never
// merged with the next: the stalls taken span no time the process ran.
func TestStallClockDropsTheOldestPastItsBound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newStallClock(time.Second, t0)
	now := t0
	for range maxStalls + 3 {
		now = now.Add(5 * time.Second) // each gap a stall of 4 s
		s.mark(now)
		now = now.Add(500 * time.Millisecond) // then the process runs
		s.mark(now)
	}
	st := s.take(now)
	if len(st) != maxStalls {
		t.Fatalf("%d stalls taken, want %d", len(st), maxStalls)
	}
	for _, x := range st {
		if x.at.Sub(x.asked) != 4*time.Second {
			t.Fatalf("a stall of %s; want every one 4 s (none merged)", x.at.Sub(x.asked))
		}
	}
	// The three oldest were dropped: the first kept ended 4 × 5.5 s − 0.5 s
	// in, the last kept is the newest.
	if first, last := st[0].at.Sub(t0), st[len(st)-1].at.Sub(t0); first != 21500*time.Millisecond || !st[len(st)-1].at.Equal(now.Add(-500*time.Millisecond)) {
		t.Fatalf("stalls kept end at %s … %s; want the newest %d (from 21.5 s)", first, last, maxStalls)
	}
}

// A mark late by half a period or more records a stall; one a little less
// late does not.
func TestStallClockThreshold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newStallClock(time.Second, t0)
	late := t0.Add(1500*time.Millisecond - time.Millisecond) // due at 1 s
	s.mark(late)
	if st := s.take(late); len(st) != 0 {
		t.Fatalf("a mark %s late recorded %v", 499*time.Millisecond, st)
	}
	at := late.Add(1500 * time.Millisecond)
	if st := s.take(at); len(st) != 1 || st[0].at.Sub(st[0].asked) != 500*time.Millisecond {
		t.Fatalf("a mark half a period late recorded %v, want one stall of 500ms", st)
	}
}

// tickerClock is a mock clock that closes started once a ticker is set
// on it.
type tickerClock struct {
	*clock.Mock
	started chan struct{}
}

func (c *tickerClock) Ticker(d time.Duration) *clock.Ticker {
	tk := c.Mock.Ticker(d)
	close(c.started)
	return tk
}

// The clock's goroutine marks it every period, so that a long turn of the
// loop (a store call of many periods) is no stall when the loop takes it.
func TestStallClockGoroutineMarks(t *testing.T) {
	clk := &tickerClock{Mock: clock.NewMock(), started: make(chan struct{})}
	s := newStallClock(time.Second, clk.Now())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.run(ctx, clk)
	// The mark is the goroutine's own state, announced by nothing: it is
	// polled after each tick.
	marked := func() {
		t.Helper()
		eventually.True(t, 5*time.Second, fmt.Sprintf("the goroutine's mark at %s", clk.Now()), func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.last.Equal(clk.Now())
		})
	}
	// Its ticker starts when the goroutine first runs: the periods before
	// that would go by unmarked.
	select {
	case <-clk.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the goroutine never started its ticker")
	}
	clk.Add(time.Second)
	marked()
	s.take(clk.Now())
	for range 10 {
		clk.Add(time.Second)
		marked()
	}
	if st := s.take(clk.Now()); len(st) != 0 {
		t.Fatalf("stalls %v after 10 periods the goroutine marked on time", st)
	}
}
