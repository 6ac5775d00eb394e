package pace_test

import (
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/pace"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestPacer(t *testing.T) {
	cases := []struct {
		name      string
		took      time.Duration
		wantAfter time.Duration // next read due this long after the last one started
	}{
		{"cheap read: the floor", 30 * time.Microsecond, 500 * time.Millisecond},
		{"a read at floor/factor: the floor", 25 * time.Millisecond, 500 * time.Millisecond},
		{"costly read: factor × its duration", time.Second, 20 * time.Second},
		{"a read that took 0", 0, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pace.Pacer{Floor: 500 * time.Millisecond, Factor: 20}
			if !p.Due(t0) {
				t.Fatal("the first read is not due")
			}
			p.Read(at(time.Second), at(time.Second+tc.took))
			if p.Due(at(time.Second + tc.wantAfter - time.Millisecond)) {
				t.Fatalf("due 1 ms before %s after the last read's start", tc.wantAfter)
			}
			if !p.Due(at(time.Second + tc.wantAfter)) {
				t.Fatalf("not due %s after the last read's start (next: %s)", tc.wantAfter, p.Next().Sub(t0))
			}
		})
	}
}

// Reads that keep getting slower keep to their share: over a run where a
// read costs more and more, the time spent reading stays under 1/Factor of
// the time elapsed (plus the last read).
func TestPacerBoundsTheShare(t *testing.T) {
	p := pace.Pacer{Factor: 20}
	now, busy := t0, time.Duration(0)
	cost := 10 * time.Millisecond
	for now.Before(at(time.Hour)) {
		if !p.Due(now) {
			now = p.Next()
			continue
		}
		p.Read(now, now.Add(cost))
		busy += cost
		now = now.Add(cost)
		cost += cost / 10
		if cost > 3*time.Second {
			cost = 3 * time.Second
		}
	}
	if share := float64(busy-3*time.Second) / float64(now.Sub(t0)); share > 1.0/20 {
		t.Fatalf("reads took %.1f%% of the time, want ≤ 5%%", 100*share)
	}
}

// A clock that steps back (a read whose end is before its start) counts as
// a read that cost nothing, not as a negative spacing.
func TestPacerClockBack(t *testing.T) {
	p := pace.Pacer{Floor: time.Second, Factor: 20}
	p.Read(at(10*time.Second), at(5*time.Second))
	if p.Due(at(10*time.Second+999*time.Millisecond)) || !p.Due(at(11*time.Second)) {
		t.Fatalf("next = %s, want 11s", p.Next().Sub(t0))
	}
}
