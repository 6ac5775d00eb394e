package driver

import (
	"testing"
	"time"
)

// The stall clock records a gap between two marks longer than its period,
// from when the next mark was due to the mark that ended it, whoever made
// that mark (its goroutine, or the loop taking it first), once; marks on
// time record nothing, and the stall reported is never longer than the gap.
func TestStallClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := newStallClock(time.Second, t0)
	for _, d := range []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond, 2700 * time.Millisecond} {
		s.mark(at(d)) // the goroutine, on time
	}
	if _, _, ok := s.take(at(3 * time.Second)); ok {
		t.Fatal("a stall reported for marks on time")
	}
	// Stopped from 3.2 s to 48 s: the loop takes it before the goroutine
	// has marked.
	asked, end, ok := s.take(at(48 * time.Second))
	if !ok || !asked.Equal(at(4*time.Second)) || !end.Equal(at(48*time.Second)) {
		t.Fatalf("take after a stop = %s..%s, %v; want 4s..48s (from when the next mark was due)", asked.Sub(t0), end.Sub(t0), ok)
	}
	s.mark(at(48100 * time.Millisecond)) // the goroutine's late tick: nothing new
	if _, _, ok := s.take(at(48200 * time.Millisecond)); ok {
		t.Fatal("one stop reported twice")
	}
	// Stopped again, and the goroutine marks first: the loop still gets it.
	s.mark(at(60 * time.Second))
	asked, end, ok = s.take(at(60100 * time.Millisecond))
	if !ok || !asked.Equal(at(49200*time.Millisecond)) || !end.Equal(at(60*time.Second)) {
		t.Fatalf("take after the goroutine saw a stop = %s..%s, %v; want 49.2s..60s", asked.Sub(t0), end.Sub(t0), ok)
	}
	// A mark from the past (a clock read before a later one) moves nothing back.
	s.mark(at(59 * time.Second))
	if _, _, ok := s.take(at(60500 * time.Millisecond)); ok {
		t.Fatal("a stall reported after a mark out of order")
	}
}
