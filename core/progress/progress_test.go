package progress

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// text is the line as the text log handler writes it.
func text(l Line) string {
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("progress", l.Attrs()...)
	return buf.String()
}

// TestProgressLine: a line at the first look while files are pending,
// then only when the counts changed since the last line, with the rate of
// files tagged per minute over the time since the previous look; none
// while nothing moves (paused, held back, every worker failed), busy or
// idle. A look whose read failed (none observed) leaves the rate over the
// whole time since the last one read.
func TestProgressLine(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var p Log
	busy := store.Counts{Total: 100, Tagged: 40, Pending: 60, Claimed: 2}
	if l, ok := p.Observe(busy, t0); !ok || l.HasRate || len(l.Attrs()) != 10 {
		t.Errorf("first look, files pending: %v %+v", ok, l)
	}
	later := store.Counts{Total: 100, Tagged: 70, Pending: 29, Claimed: 2, Failed: 1}
	l, ok := p.Observe(later, t0.Add(5*time.Minute))
	if want := "tagged=70 pending=29 in_progress=2 failed=1 total=100 per_minute=6"; !ok || !strings.Contains(text(l), want) {
		t.Errorf("progress line %q, want %s", text(l), want)
	}
	for i := 2; i <= 4; i++ { // stuck: files pending and claimed, nothing moves
		if l, ok := p.Observe(later, t0.Add(time.Duration(i)*5*time.Minute)); ok {
			t.Errorf("a line though nothing moved since the last: %s", text(l))
		}
	}
	// The look at 25 min failed to read: the rate runs over the 10 min
	// since the look at 20 min, not over one interval.
	moved := store.Counts{Total: 100, Tagged: 90, Pending: 9, Claimed: 1, Failed: 1}
	l, ok = p.Observe(moved, t0.Add(30*time.Minute))
	if want := "tagged=90 pending=9 in_progress=1 failed=1 total=100 per_minute=2"; !ok || !strings.Contains(text(l), want) {
		t.Errorf("progress line after a failed read %q, want %s", text(l), want)
	}
	done := store.Counts{Total: 100, Tagged: 99, Failed: 1}
	if _, ok := p.Observe(done, t0.Add(35*time.Minute)); !ok {
		t.Error("no line for the look that finished the work")
	}
	if _, ok := p.Observe(done, t0.Add(40*time.Minute)); ok {
		t.Error("a line for an idle library")
	}
	var idle Log
	if _, ok := idle.Observe(done, t0); ok {
		t.Error("a line at the first look at an idle library")
	}
}

// Until the first line, only work to do makes one: an idle library whose
// counts change (a scan that found files gone) logs nothing, and the
// first line's rate runs from the look before it.
func TestNoLineUntilWork(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var p Log
	if _, ok := p.Observe(store.Counts{Total: 10, Tagged: 10}, t0); ok {
		t.Fatal("a line for an idle library")
	}
	if _, ok := p.Observe(store.Counts{Total: 9, Tagged: 9}, t0.Add(5*time.Minute)); ok {
		t.Fatal("a line for an idle library whose counts changed")
	}
	l, ok := p.Observe(store.Counts{Total: 29, Tagged: 19, Pending: 10}, t0.Add(10*time.Minute))
	if !ok || !l.HasRate || l.PerMinute != 2 {
		t.Fatalf("first line with work: %v %+v, want per_minute 2", ok, l)
	}
}

// The rate is rounded to one decimal and never negative: files tagged
// that left the store (forget, a re-tag) tell no rate; a look at the same
// instant as the previous one tells none either.
func TestRateRoundsAndClamps(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var p Log
	p.Observe(store.Counts{Total: 100, Tagged: 50, Pending: 50}, t0)
	if l, _ := p.Observe(store.Counts{Total: 100, Tagged: 51, Pending: 49}, t0.Add(3*time.Minute)); !l.HasRate || l.PerMinute != 0.3 {
		t.Errorf("1 file in 3 min: %+v, want per_minute 0.3", l)
	}
	if l, _ := p.Observe(store.Counts{Total: 100, Tagged: 20, Pending: 80}, t0.Add(6*time.Minute)); !l.HasRate || l.PerMinute != 0 {
		t.Errorf("tagged fell: %+v, want per_minute 0", l)
	}
	if l, ok := p.Observe(store.Counts{Total: 100, Tagged: 21, Pending: 79}, t0.Add(6*time.Minute)); !ok || l.HasRate {
		t.Errorf("no time passed: %v %+v, want a line without a rate", ok, l)
	}
	if attrs := (Line{Counts: store.Counts{Pending: 1}}).Attrs(); len(attrs) != 10 {
		t.Errorf("a line without a rate has per_minute: %v", attrs)
	}
}
