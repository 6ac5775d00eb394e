package clockskew

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sample is a request sent at t0 that took rtt, answered with the server's
// clock read at the round trip's midpoint, offset from this host's.
func sample(offset, rtt time.Duration) Sample {
	return Sample{Sent: t0, Received: t0.Add(rtt), Server: t0.Add(rtt / 2).Add(offset)}
}

// The offset is the server's time minus the round trip's midpoint, within
// half the round trip either way.
func TestSampleOffset(t *testing.T) {
	for _, c := range []struct {
		name             string
		s                Sample
		offset, unc, rtt time.Duration
	}{
		{"same clock", sample(0, 0), 0, 0, 0},
		{"host behind", sample(7*time.Second, 20*time.Millisecond), 7 * time.Second, 10 * time.Millisecond, 20 * time.Millisecond},
		{"host ahead", sample(-3*time.Second, 2*time.Millisecond), -3 * time.Second, time.Millisecond, 2 * time.Millisecond},
		// The server read its clock as the request arrived, not at the
		// midpoint: the estimate is off by at most the uncertainty.
		{"server read early", Sample{Sent: t0, Received: t0.Add(4 * time.Second), Server: t0}, -2 * time.Second, 2 * time.Second, 4 * time.Second},
	} {
		if got := c.s.Offset(); got != c.offset {
			t.Errorf("%s: offset %v, want %v", c.name, got, c.offset)
		}
		if got := c.s.Uncertainty(); got != c.unc {
			t.Errorf("%s: uncertainty %v, want %v", c.name, got, c.unc)
		}
		if got := c.s.RoundTrip(); got != c.rtt {
			t.Errorf("%s: round trip %v, want %v", c.name, got, c.rtt)
		}
	}
}

// Of several samples the one with the shortest round trip is kept (the
// first of equals); one with a negative round trip or no server time is
// never kept.
func TestBest(t *testing.T) {
	slow, fast, alsoFast := sample(time.Second, 300*time.Millisecond), sample(2*time.Second, 5*time.Millisecond), sample(3*time.Second, 5*time.Millisecond)
	back := Sample{Sent: t0, Received: t0.Add(-time.Second), Server: t0}
	noTime := Sample{Sent: t0, Received: t0}
	for _, c := range []struct {
		name string
		in   []Sample
		want Sample
		ok   bool
	}{
		{"none", nil, Sample{}, false},
		{"one", []Sample{slow}, slow, true},
		{"shortest", []Sample{slow, fast, slow}, fast, true},
		{"first of equals", []Sample{slow, fast, alsoFast}, fast, true},
		{"clock went back", []Sample{back, slow}, slow, true},
		{"no server time", []Sample{noTime, slow}, slow, true},
		{"none usable", []Sample{back, noTime}, Sample{}, false},
	} {
		got, ok := Best(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: Best = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// The thresholds are lease_ttl/6 and lease_ttl/3.
func TestForLease(t *testing.T) {
	if p := ForLease(30 * time.Second); p.Warn != 5*time.Second || p.Danger != 10*time.Second {
		t.Errorf("ForLease(30s) = %+v, want warn 5s, danger 10s", p)
	}
	if p := ForLease(3 * time.Second); p.Warn != 500*time.Millisecond || p.Danger != time.Second {
		t.Errorf("ForLease(3s) = %+v, want warn 500ms, danger 1s", p)
	}
}

// A threshold is crossed only when the offset is surely beyond it (by more
// than the uncertainty), either way; a round trip longer than Warn makes a
// sample that is not surely beyond Warn unknown, never ok.
func TestJudge(t *testing.T) {
	p := ForLease(30 * time.Second) // warn 5 s, danger 10 s
	ms := time.Millisecond
	for _, c := range []struct {
		name        string
		offset, rtt time.Duration
		want        State
	}{
		{"in sync", 0, 2 * ms, OK},
		{"at warn", 5 * time.Second, 0, OK},
		{"just beyond warn", 5*time.Second + ms, 0, Warn},
		{"just beyond warn, ahead", -5*time.Second - ms, 0, Warn},
		{"beyond warn within the uncertainty", 5*time.Second + ms, 2 * ms, OK},
		{"beyond warn by the uncertainty", 5*time.Second + ms + ms, 2 * ms, Warn},
		{"at danger", 10 * time.Second, 0, Warn},
		{"just beyond danger", 10*time.Second + ms, 0, Dangerous},
		{"just beyond danger, ahead", -10*time.Second - ms, 0, Dangerous},
		{"beyond danger within the uncertainty", 10*time.Second + 5*ms, 10 * ms, Warn},
		{"beyond danger by more than the uncertainty", 10*time.Second + 6*ms, 10 * ms, Dangerous},
		{"round trip at warn", 0, 5 * time.Second, OK},
		{"round trip beyond warn", 0, 5*time.Second + ms, Unknown},
		{"round trip beyond warn, offset near warn", 4 * time.Second, 6 * time.Second, Unknown},
		{"slow but surely dangerous", 60 * time.Second, 8 * time.Second, Dangerous},
		{"slow but surely beyond warn", 12 * time.Second, 8 * time.Second, Warn},
	} {
		r := p.Judge(sample(c.offset, c.rtt))
		if r.State != c.want {
			t.Errorf("%s (offset %v, round trip %v): %s, want %s", c.name, c.offset, c.rtt, r.State, c.want)
		}
		if r.Offset != c.offset || r.Uncertainty != c.rtt/2 || !r.At.Equal(t0.Add(c.rtt)) {
			t.Errorf("%s: reading %+v, want offset %v ± %v at the answer", c.name, r, c.offset, c.rtt/2)
		}
	}
}

// Only warn and dangerous call for the operator.
func TestAlarming(t *testing.T) {
	for s, want := range map[State]bool{OK: false, Warn: true, Dangerous: true, Unknown: false} {
		if s.Alarming() != want {
			t.Errorf("%s alarming: %v, want %v", s, !want, want)
		}
	}
}

// The watch says when the state changes, and only then.
func TestWatch(t *testing.T) {
	var w Watch
	if _, ok := w.Last(); ok {
		t.Fatal("a new watch has a reading")
	}
	steps := []struct {
		state State
		from  State
		chg   bool
	}{
		{OK, "", true},
		{OK, OK, false},
		{Warn, OK, true},
		{Warn, Warn, false},
		{Dangerous, Warn, true},
		{Unknown, Dangerous, true},
		{OK, Unknown, true},
	}
	for i, s := range steps {
		r := Reading{Offset: time.Duration(i) * time.Second, State: s.state}
		from, chg := w.Note(r)
		if from != s.from || chg != s.chg {
			t.Errorf("step %d (%s): from %q changed %v, want %q %v", i, s.state, from, chg, s.from, s.chg)
		}
		if last, ok := w.Last(); !ok || last != r {
			t.Errorf("step %d: last %+v, want %+v", i, last, r)
		}
	}
}

// An offset in words: behind when the server is ahead, and back.
func TestWords(t *testing.T) {
	for off, want := range map[time.Duration]string{
		12500 * time.Millisecond: "12.5s behind",
		-3 * time.Second:         "3s ahead of",
		0:                        "in line with",
	} {
		if got := Words(off); got != want {
			t.Errorf("Words(%v) = %q, want %q", off, got, want)
		}
	}
}
