package monitor_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/monitor"
	"github.com/nomarr/nomarr/core/store"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// fakeOwner answers statuses from a map and counts polls per component.
type fakeOwner struct {
	status map[string]health.Status
	polls  map[string]int
}

func newOwner(st map[string]health.Status) *fakeOwner {
	return &fakeOwner{status: st, polls: map[string]int{}}
}

func (o *fakeOwner) Status(id string, _ time.Time) health.Status {
	o.polls[id]++
	return o.status[id]
}

// fakeHistory records every AppendHistory call (copying the rows) and fails
// while fail is set.
type fakeHistory struct {
	calls [][]store.HistoryRow
	fail  bool
	tries int
}

func (h *fakeHistory) AppendHistory(_ context.Context, rows []store.HistoryRow) error {
	h.tries++
	if h.fail {
		return errors.New("history: store down")
	}
	h.calls = append(h.calls, slices.Clone(rows))
	return nil
}

type recorder struct{ events []event.Event }

func (r *recorder) Emit(e event.Event) { r.events = append(r.events, e) }

func (r *recorder) of(kind string) []event.Event {
	var out []event.Event
	for _, e := range r.events {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

const (
	a = "worker:discovery:0"
	b = "worker:discovery:1"
)

func TestEventsOnlyOnTransitions(t *testing.T) {
	ctx := context.Background()
	ev := &recorder{}
	own := newOwner(map[string]health.Status{a: health.Pending})
	m := monitor.New(monitor.DefaultConfig(), "inst-a", nil, ev)
	m.Register(a, own)
	if _, ok := m.Status(a); ok {
		t.Fatal("status known before the first poll")
	}
	m.Tick(ctx, t0)
	steps := []struct {
		d    time.Duration
		set  health.Status
		want []string // from->to of new events
	}{
		{500 * time.Millisecond, health.Healthy, nil}, // not due: no poll
		{time.Second, "", []string{"pending->healthy"}},
		{2 * time.Second, "", nil},
		{3 * time.Second, health.Unhealthy, []string{"healthy->unhealthy"}},
		{4 * time.Second, health.Unhealthy, nil},
		{5 * time.Second, health.Healthy, []string{"unhealthy->healthy"}},
	}
	got := ev.of(event.Status)
	if len(got) != 1 || got[0].From != "" || got[0].To != "pending" || got[0].Component != a || got[0].Instance != "inst-a" || !got[0].T.Equal(t0) {
		t.Fatalf("first status event = %+v", got)
	}
	for _, s := range steps {
		if s.set != "" {
			own.status[a] = s.set
		}
		before := len(ev.of(event.Status))
		m.Tick(ctx, at(s.d))
		var fresh []string
		for _, e := range ev.of(event.Status)[before:] {
			fresh = append(fresh, e.From+"->"+e.To)
		}
		if !slices.Equal(fresh, s.want) {
			t.Fatalf("at %s: events %v, want %v", s.d, fresh, s.want)
		}
	}
	if own.polls[a] != 6 {
		t.Fatalf("polls = %d, want 6 (one per check interval)", own.polls[a])
	}
	st := m.Stats()
	if st.Polls != 6 || st.Transitions != 4 {
		t.Fatalf("stats = %+v", st)
	}
	if s, ok := m.Status(a); !ok || s != health.Healthy {
		t.Fatalf("Status = %s %v", s, ok)
	}
}

func TestStopsPollingFailedAndResume(t *testing.T) {
	ctx := context.Background()
	own := newOwner(map[string]health.Status{a: health.Healthy, b: health.Healthy})
	m := monitor.New(monitor.DefaultConfig(), "inst-a", nil, nil)
	m.Register(a, own)
	m.Register(b, own)
	m.Tick(ctx, t0)
	own.status[a] = health.Failed
	m.Tick(ctx, at(time.Second))
	if m.Polling(a) || !m.Polling(b) {
		t.Fatalf("Polling(a)=%v Polling(b)=%v", m.Polling(a), m.Polling(b))
	}
	polls := own.polls[a]
	for d := 2 * time.Second; d <= 10*time.Second; d += time.Second {
		m.Tick(ctx, at(d))
	}
	if own.polls[a] != polls {
		t.Fatalf("failed component polled %d more times", own.polls[a]-polls)
	}
	if own.polls[b] != 11 {
		t.Fatalf("b polls = %d, want 11", own.polls[b])
	}
	if s, _ := m.Status(a); s != health.Failed {
		t.Fatalf("Status(a) = %s", s)
	}
	own.status[a] = health.Pending
	m.Resume(a)
	m.Tick(ctx, at(11*time.Second))
	if own.polls[a] != polls+1 || !m.Polling(a) {
		t.Fatalf("not polled after Resume")
	}
	if s, _ := m.Status(a); s != health.Pending {
		t.Fatalf("Status(a) after Resume = %s", s)
	}
	if m.Polling("unknown") {
		t.Fatal("unknown component polled")
	}
}

func TestHistorySnapshots(t *testing.T) {
	ctx := context.Background()
	h := &fakeHistory{}
	own := newOwner(map[string]health.Status{a: health.Healthy, b: health.Pending})
	m := monitor.New(monitor.DefaultConfig(), "inst-a", h, nil)
	m.Register(a, own)
	m.Register(b, own)
	for d := time.Duration(0); d < 30*time.Second; d += time.Second {
		m.Tick(ctx, at(d))
	}
	if h.tries != 0 {
		t.Fatalf("history written before history_interval: %+v", h.calls)
	}
	m.Tick(ctx, at(30*time.Second))
	if len(h.calls) != 1 {
		t.Fatalf("AppendHistory calls = %d, want 1 batched call", len(h.calls))
	}
	want := []store.HistoryRow{
		{At: at(30 * time.Second), Instance: "inst-a", Component: a, Status: "healthy"},
		{At: at(30 * time.Second), Instance: "inst-a", Component: b, Status: "pending"},
	}
	if !slices.Equal(h.calls[0], want) {
		t.Fatalf("rows = %+v, want %+v", h.calls[0], want)
	}
	for d := 31 * time.Second; d <= 60*time.Second; d += time.Second {
		m.Tick(ctx, at(d))
	}
	if len(h.calls) != 2 || len(h.calls[1]) != 2 || !h.calls[1][0].At.Equal(at(60*time.Second)) {
		t.Fatalf("second snapshot = %+v", h.calls)
	}
	if st := m.Stats(); st.HistoryWrites != 2 || st.HistoryFails != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestHistoryFailureBufferedAndBounded(t *testing.T) {
	ctx := context.Background()
	h := &fakeHistory{fail: true}
	own := newOwner(map[string]health.Status{a: health.Healthy, b: health.Unhealthy})
	cfg := monitor.Config{CheckInterval: time.Second, HistoryInterval: 30 * time.Second, HistoryBuffer: 4}
	m := monitor.New(cfg, "inst-a", h, nil)
	m.Register(a, own)
	m.Register(b, own)
	m.Tick(ctx, t0)
	m.Tick(ctx, at(30*time.Second)) // fails: 2 rows kept
	m.Tick(ctx, at(60*time.Second)) // fails: 4 rows kept
	if st := m.Stats(); st.HistoryFails != 2 || st.HistoryDropped != 0 || st.HistoryWrites != 0 {
		t.Fatalf("stats after two failures = %+v", st)
	}
	h.fail = false
	m.Tick(ctx, at(90*time.Second)) // 6 rows > 4: the two oldest dropped, 4 written at once
	if len(h.calls) != 1 {
		t.Fatalf("AppendHistory successful calls = %d, want 1", len(h.calls))
	}
	rows := h.calls[0]
	if len(rows) != 4 || !rows[0].At.Equal(at(60*time.Second)) || !rows[3].At.Equal(at(90*time.Second)) {
		t.Fatalf("rows written after recovery = %+v", rows)
	}
	if st := m.Stats(); st.HistoryDropped != 2 || st.HistoryWrites != 1 || st.HistoryFails != 2 {
		t.Fatalf("stats = %+v", st)
	}
	m.Tick(ctx, at(120*time.Second))
	if len(h.calls) != 2 || len(h.calls[1]) != 2 {
		t.Fatalf("rows re-sent after a successful write: %+v", h.calls)
	}
}

func TestHooksRunOnPeriod(t *testing.T) {
	ctx := context.Background()
	ev := &recorder{}
	m := monitor.New(monitor.DefaultConfig(), "inst-a", nil, ev)
	var runs []time.Duration
	m.AddHook(monitor.Hook{Name: "claim cleanup", Period: 30 * time.Second, Run: func(_ context.Context, now time.Time) error {
		runs = append(runs, now.Sub(t0))
		if len(runs) == 2 {
			return errors.New("store down")
		}
		return nil
	}})
	for d := time.Duration(0); d <= 100*time.Second; d += time.Second {
		m.Tick(ctx, at(d))
	}
	want := []time.Duration{30 * time.Second, 60 * time.Second, 90 * time.Second}
	if !slices.Equal(runs, want) {
		t.Fatalf("hook runs at %v, want %v", runs, want)
	}
	if st := m.Stats(); st.HookFails != 1 {
		t.Fatalf("HookFails = %d, want 1", st.HookFails)
	}
	se := ev.of(event.StoreError)
	if len(se) != 1 || se[0].Reason != "claim cleanup: store down" || !se[0].T.Equal(at(60*time.Second)) {
		t.Fatalf("store_error events = %+v", se)
	}
}

func TestNextWake(t *testing.T) {
	ctx := context.Background()
	m := monitor.New(monitor.DefaultConfig(), "inst-a", &fakeHistory{}, nil)
	m.Register(a, newOwner(map[string]health.Status{a: health.Healthy}))
	m.Tick(ctx, t0)
	if w := m.NextWake(); !w.Equal(at(time.Second)) {
		t.Fatalf("NextWake = %s, want 1s", w.Sub(t0))
	}
	cfg := monitor.Config{CheckInterval: 10 * time.Second, HistoryInterval: 4 * time.Second}
	m2 := monitor.New(cfg, "inst-a", &fakeHistory{}, nil)
	m2.AddHook(monitor.Hook{Name: "h", Period: 7 * time.Second, Run: func(context.Context, time.Time) error { return nil }})
	m2.Tick(ctx, t0)
	if w := m2.NextWake(); !w.Equal(at(4 * time.Second)) {
		t.Fatalf("NextWake = %s, want 4s (history)", w.Sub(t0))
	}
	m2.Tick(ctx, at(4*time.Second))
	if w := m2.NextWake(); !w.Equal(at(7 * time.Second)) {
		t.Fatalf("NextWake = %s, want 7s (hook)", w.Sub(t0))
	}
	m2.Tick(ctx, at(7*time.Second))
	if w := m2.NextWake(); !w.Equal(at(8 * time.Second)) {
		t.Fatalf("NextWake = %s, want 8s (history)", w.Sub(t0))
	}
}

// A snapshot has rows only for components with a recorded status: one
// registered after the last check, not polled yet, has none (a row with an
// empty status is no status).
func TestHistorySkipsComponentsNotPolledYet(t *testing.T) {
	ctx := context.Background()
	h := &fakeHistory{}
	own := newOwner(map[string]health.Status{a: health.Healthy, b: health.Healthy})
	cfg := monitor.Config{CheckInterval: 10 * time.Second, HistoryInterval: 4 * time.Second}
	m := monitor.New(cfg, "inst-a", h, nil)
	m.Register(a, own)
	m.Tick(ctx, t0)
	m.Register(b, own)
	m.Tick(ctx, at(4*time.Second)) // a snapshot, no check
	want := []store.HistoryRow{{At: at(4 * time.Second), Instance: "inst-a", Component: a, Status: "healthy"}}
	if len(h.calls) != 1 || !slices.Equal(h.calls[0], want) {
		t.Fatalf("history calls = %+v, want one with the row of %s only", h.calls, a)
	}
}

// Registering a failed component again (a new owner, or the same after a
// reset) polls it again, as Resume does.
func TestRegisterAgainResumesPolling(t *testing.T) {
	ctx := context.Background()
	own := newOwner(map[string]health.Status{a: health.Failed})
	m := monitor.New(monitor.DefaultConfig(), "inst-a", nil, nil)
	m.Register(a, own)
	m.Tick(ctx, t0)
	if m.Polling(a) {
		t.Fatal("failed component still polled")
	}
	again := newOwner(map[string]health.Status{a: health.Pending})
	m.Register(a, again)
	if !m.Polling(a) {
		t.Fatal("registered again, not polled")
	}
	m.Tick(ctx, at(time.Second))
	if again.polls[a] != 1 {
		t.Fatalf("new owner polled %d times, want 1", again.polls[a])
	}
	if s, _ := m.Status(a); s != health.Pending {
		t.Fatalf("Status(a) = %s, want pending", s)
	}
}
