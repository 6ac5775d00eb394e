package driver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/clockskew"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// skewedStore is a store whose server clock is off the test's clock by
// skew, or fails with err.
type skewedStore struct {
	*memstore.Store
	clk   clock.Clock
	mu    sync.Mutex
	skew  time.Duration
	err   error
	calls int
}

func (s *skewedStore) ServerTime(context.Context) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return time.Time{}, s.err
	}
	return s.clk.Now().Add(s.skew), nil
}

func (s *skewedStore) set(skew time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew, s.err = skew, err
}

// armedClock is a mock clock that announces each timer set on it, with
// its duration: the watch sets one after each measurement, so the test
// knows when one is done and when the next is due.
type armedClock struct {
	*clock.Mock
	armed chan time.Duration
}

func newArmedClock() *armedClock {
	return &armedClock{Mock: clock.NewMock(), armed: make(chan time.Duration, 16)}
}

func (c *armedClock) Timer(d time.Duration) *clock.Timer {
	t := c.Mock.Timer(d)
	c.armed <- d
	return t
}

// measured waits until the watch has measured and set its timer, and
// returns the timer's duration.
func (c *armedClock) measured(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("the watch set no timer in 5 s")
		return 0
	}
}

// clockMain is a Main on st with a mock clock, logging into logs.
func clockMain(t *testing.T, st store.Store, clk clock.Clock, logs io.Writer) *Main {
	t.Helper()
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(logs, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now()) // the loop's first step, without the loop
	return m
}

// advanceUntil moves clk on by step, through the watch's timer of
// duration next, until cond holds after a measurement, and returns how
// far it moved and the duration of the timer then set; it fails once it
// moved by limit.
func advanceUntil(t *testing.T, clk *armedClock, next, step, limit time.Duration, cond func() bool) (time.Duration, time.Duration) {
	t.Helper()
	var moved time.Duration
	for {
		for left := next; left > 0; left -= step {
			if moved >= limit {
				t.Fatalf("nothing after %v", moved)
			}
			clk.Add(min(step, left))
			moved += min(step, left)
		}
		next = clk.measured(t)
		if cond() {
			return moved, next
		}
	}
}

// readingAfter is a condition: m has a reading taken after at.
func readingAfter(m *Main, at time.Time) func() bool {
	return func() bool {
		r, ok := m.ClockSkew()
		return ok && r.At.After(at)
	}
}

// A main process whose store's server clock is off its own measures it at
// start and every 5 minutes, shows it in /api/v1/info (clock_offset_ms,
// clock_skew) and /metrics (nomarr_clock_offset_seconds), and logs a WARN
// line, with the offset and what to do, once per change of verdict: 12 s
// behind with a 30 s lease is dangerous, the same again says nothing, back
// in line is one INFO line, 6 s ahead is a warning.
func TestWatchClockShowsSkew(t *testing.T) {
	clk := newArmedClock()
	clk.Set(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := &skewedStore{Store: memstore.New(1), clk: clk, skew: 12 * time.Second}
	logs := &syncbuf.Buffer{}
	m := clockMain(t, st, clk, logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.WatchClock(ctx, 30*time.Second); close(done) }()
	defer func() { cancel(); <-done }()

	next := clk.measured(t) // at start, without waiting
	if !readingAfter(m, time.Time{})() {
		t.Fatal("no reading after the first measurement")
	}
	api := &API{Main: m, StoreID: "arangodb://h/db"}
	info, err := api.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.ClockOffsetMs == nil || *info.ClockOffsetMs != 12000 || info.ClockUncertaintyMs == nil || *info.ClockUncertaintyMs != 0 ||
		info.ClockSkew != "dangerous" {
		t.Fatalf("info's clock: offset %v ± %v, %q; want 12000 ms ± 0, dangerous", info.ClockOffsetMs, info.ClockUncertaintyMs, info.ClockSkew)
	}
	if r, _ := m.ClockSkew(); info.ClockMeasuredAt == nil || !info.ClockMeasuredAt.Equal(r.At) {
		t.Fatalf("info's clock measured at %v, want the reading's %v", info.ClockMeasuredAt, r.At)
	}
	srv, err := httpapi.New(api, httpapi.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	fams := scrapeMetrics(t, srv)
	if g := fams["nomarr_clock_offset_seconds"]; g == nil || len(g.Metric) != 1 || g.Metric[0].GetGauge().GetValue() != 12 {
		t.Fatalf("nomarr_clock_offset_seconds = %v, want one gauge at 12", g)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), `clock="12s behind the server's"`) ||
		!strings.Contains(logs.String(), "NTP") {
		t.Fatalf("%d WARN lines, want 1 with the offset and NTP:\n%s", n, logs)
	}

	// The next measurement is 5 minutes on; the same verdict is not
	// logged again.
	r, _ := m.ClockSkew()
	moved, next := advanceUntil(t, clk, next, 10*time.Second, 2*clockskew.Every, readingAfter(m, r.At))
	if moved != clockskew.Every {
		t.Fatalf("measured again after %v, want %v", moved, clockskew.Every)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines after the same verdict again, want 1:\n%s", n, logs)
	}

	for _, step := range []struct {
		skew time.Duration
		want clockskew.State
		log  string
	}{
		{0, clockskew.OK, `level=INFO msg="clock back in line with the store server's" clock_skew=ok offset=0s uncertainty=0s was=dangerous`},
		{-6 * time.Second, clockskew.Warn, `clock="6s ahead of the server's" warn_beyond=5s dangerous_beyond=10s lease_ttl=30s`},
	} {
		st.set(step.skew, nil)
		r, _ := m.ClockSkew()
		_, next = advanceUntil(t, clk, next, 10*time.Second, 2*clockskew.Every, readingAfter(m, r.At))
		if r, _ := m.ClockSkew(); r.State != step.want || r.Offset != step.skew {
			t.Fatalf("reading %+v, want %v, %s", r, step.skew, step.want)
		}
		if !strings.Contains(logs.String(), step.log) {
			t.Fatalf("no %q in the log:\n%s", step.log, logs)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d WARN lines, want 2 (dangerous, then warn):\n%s", n, logs)
	}
}

// A measurement that got no answer keeps the last reading and is tried
// again after clockskew.Retry, not 5 minutes.
func TestWatchClockRetriesSoonerAfterAFailure(t *testing.T) {
	clk := newArmedClock()
	st := &skewedStore{Store: memstore.New(1), clk: clk, err: errors.New("connection refused")}
	m := clockMain(t, st, clk, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.WatchClock(ctx, 30*time.Second); close(done) }()
	defer func() { cancel(); <-done }()
	calls := func() int {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.calls
	}
	next := clk.measured(t)
	if n := calls(); n != clockskew.Tries {
		t.Fatalf("%d requests in the failed measurement, want %d", n, clockskew.Tries)
	}
	if _, ok := m.ClockSkew(); ok {
		t.Fatal("a reading without an answer")
	}
	st.set(0, nil)
	moved, next := advanceUntil(t, clk, next, time.Second, clockskew.Every, readingAfter(m, time.Time{}))
	if moved != clockskew.Retry {
		t.Fatalf("measured again after %v, want %v", moved, clockskew.Retry)
	}
	st.set(0, errors.New("connection refused"))
	r, _ := m.ClockSkew()
	before := calls()
	advanceUntil(t, clk, next, 10*time.Second, 2*clockskew.Every, func() bool { return calls() == before+clockskew.Tries })
	if r2, ok := m.ClockSkew(); !ok || r2 != r {
		t.Fatalf("reading after a failed measurement = %+v, %v; want the last, %+v", r2, ok, r)
	}
}

// A store without a server clock (SQLite), or one that turns out to have
// none behind a wrapper (store.ErrNoServerClock), is not measured: the
// watch returns, and info and /metrics show no clock.
func TestWatchClockWithoutServerClock(t *testing.T) {
	noClock := &skewedStore{Store: memstore.New(1), err: store.ErrNoServerClock}
	for name, st := range map[string]store.Store{"plain": memstore.New(1), "ErrNoServerClock": noClock} {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewMock()
			noClock.clk = clk
			m := clockMain(t, st, clk, io.Discard)
			done := make(chan struct{})
			go func() { m.WatchClock(context.Background(), 30*time.Second); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("WatchClock did not return")
			}
			api := &API{Main: m, StoreID: "sqlite:/x.db"}
			info, err := api.Info(context.Background())
			if err != nil || info.ClockOffsetMs != nil || info.ClockUncertaintyMs != nil || info.ClockSkew != "" {
				t.Fatalf("info's clock = %v ± %v %q, %v; want none", info.ClockOffsetMs, info.ClockUncertaintyMs, info.ClockSkew, err)
			}
			srv, err := httpapi.New(api, httpapi.Options{Addr: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := scrapeMetrics(t, srv)["nomarr_clock_offset_seconds"]; ok {
				t.Fatal("nomarr_clock_offset_seconds without a measurement")
			}
		})
	}
}

// sequence answers with the times of at, one per call, or fails where at
// holds a zero time.
type sequence struct {
	at []time.Time
	n  int
}

func (s *sequence) ServerTime(context.Context) (time.Time, error) {
	t := s.at[s.n]
	s.n++
	if t.IsZero() {
		return t, errors.New("timeout")
	}
	return t, nil
}

// SampleClock makes clockskew.Tries requests and keeps the one with the
// shortest round trip; a failed one is left out; none answering is an
// error, as is ErrNoServerClock at once.
func TestSampleClock(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ticks := func(d ...time.Duration) func() time.Time { // this host's clock: one reading per call
		i := 0
		return func() time.Time { t := base.Add(d[i]); i++; return t }
	}
	ms := time.Millisecond
	// Round trips of 200 ms, 10 ms (the second), 60 ms; the server 3 s ahead
	// at each midpoint, but the second's answer is the one to keep.
	sc := &sequence{at: []time.Time{base.Add(3100 * ms), base.Add(1005*ms + 3*time.Second), base.Add(2030*ms + 3*time.Second)}}
	s, err := SampleClock(context.Background(), sc, ticks(0, 200*ms, time.Second, 1010*ms, 2*time.Second, 2060*ms))
	if err != nil || s.RoundTrip() != 10*ms || s.Offset() != 3*time.Second || sc.n != clockskew.Tries {
		t.Fatalf("SampleClock = %+v (round trip %v, offset %v), %v after %d calls; want the second: 10ms, 3s, after 3", s, s.RoundTrip(), s.Offset(), err, sc.n)
	}
	sc = &sequence{at: []time.Time{{}, base.Add(3 * time.Second), {}}}
	if s, err := SampleClock(context.Background(), sc, ticks(0, 0, 0, 0, 0, 0)); err != nil || s.Offset() != 3*time.Second {
		t.Fatalf("SampleClock with two failures = %+v, %v; want the one answer", s, err)
	}
	sc = &sequence{at: []time.Time{{}, {}, {}}}
	if _, err := SampleClock(context.Background(), sc, ticks(0, 0, 0, 0, 0, 0)); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("SampleClock with no answer: %v, want the last error", err)
	}
	none := &skewedStore{err: store.ErrNoServerClock}
	if _, err := SampleClock(context.Background(), none, ticks(0, 0, 0, 0, 0, 0)); !errors.Is(err, store.ErrNoServerClock) || none.calls != 1 {
		t.Fatalf("SampleClock without a server clock: %v after %d calls, want ErrNoServerClock after 1", err, none.calls)
	}
}
