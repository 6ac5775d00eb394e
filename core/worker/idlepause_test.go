package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// An idle worker reads the pause flag at least every paused_poll (1 s)
// between the discoveries of its adaptive poll (1 s × 1.5 up to 30 s): a
// pause shows within 1 s however long the poll has grown, and the reads in
// between query nothing but the flag, so discovery is as frequent as
// before.

// countingStore counts the discovery queries, the pause flag reads and
// the GPU preflights.
type countingStore struct {
	*memstore.Store
	discoveries int
	flagReads   int
	preflights  int
}

func (s *countingStore) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	s.discoveries++
	return s.Store.Discover(ctx, now, after, limit)
}

func (s *countingStore) GetMeta(ctx context.Context, key string) (string, bool, error) {
	switch key {
	case store.MetaWorkerEnabled:
		s.flagReads++
	case store.MetaGPUHealth:
		s.preflights++
	}
	return s.Store.GetMeta(ctx, key)
}

// countingRig is a rig whose worker, configured by mod, talks to a
// countingStore.
func countingRig(t *testing.T, mod func(*worker.Config)) (*rig, *countingStore) {
	t.Helper()
	r := newRig(t, nil)
	cs := &countingStore{Store: r.st}
	cfg := worker.DefaultConfig(comp, wid)
	if mod != nil {
		mod(&cfg)
	}
	w, err := worker.New(cfg, cs, r.ev)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	return r, cs
}

// discoverySchedule is docs/design.md §8's idle poll: the times, from the first
// discovery at 0, of the discoveries before end.
func discoverySchedule(end time.Duration) []time.Duration {
	var out []time.Duration
	poll := time.Second
	for t := time.Duration(0); t < end; {
		out = append(out, t)
		t += poll
		poll = min(time.Duration(float64(poll)*1.5), 30*time.Second)
	}
	return out
}

// idleFor steps an idle worker from now to end as a driver does, and
// returns the times (from t0) of its discoveries and the time of its last
// step. Every step must wait, in phase idle.
func idleFor(r *rig, cs *countingStore, now, end time.Time) ([]time.Duration, time.Time) {
	r.t.Helper()
	var found []time.Duration
	last := now
	for now.Before(end) {
		before := cs.discoveries
		s := r.wantStep(now, worker.Wait)
		if r.w.Phase() != health.Idle {
			r.t.Fatalf("phase at %s = %s, want idle", now.Sub(t0), r.w.Phase())
		}
		if !s.Until.After(now) {
			r.t.Fatalf("wait at %s until %s: no time passes", now.Sub(t0), s.Until.Sub(t0))
		}
		if cs.discoveries != before {
			found = append(found, now.Sub(t0))
		}
		last, now = now, s.Until
	}
	return found, last
}

func TestIdleWorkerShowsAPauseWithinPausedPoll(t *testing.T) {
	r, cs := countingRig(t, nil)
	found, last := idleFor(r, cs, t0, at(3*time.Minute))
	want := discoverySchedule(3 * time.Minute)
	if len(found) != len(want) {
		t.Fatalf("discoveries at %v, want %v", found, want)
	}
	for i := range want {
		if found[i] != want[i] {
			t.Fatalf("discovery %d at %s, want %s (all: %v)", i, found[i], want[i], found)
		}
	}
	// The poll is at its 30 s cap. Pause right after a discovery, the
	// worst case before: its wait was the whole poll.
	now := last
	for n := cs.discoveries; cs.discoveries == n; {
		last = now
		now = r.wantStep(now, worker.Wait).Until
	}
	paused := last.Add(100 * time.Millisecond)
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	discoveries := cs.discoveries
	seenAt := now
	for {
		s := r.wantStep(seenAt, worker.Wait)
		if r.w.Phase() == health.Paused {
			now = s.Until
			break
		}
		seenAt = s.Until
	}
	if seen := seenAt.Sub(paused); seen > time.Second {
		t.Fatalf("paused shown %s after the pause, want within paused_poll (1s)", seen)
	}
	if cs.flagReads < int(3*time.Minute/time.Second) {
		t.Fatalf("%d flag reads in over 3 min, want one a second at least", cs.flagReads)
	}
	if f := r.w.Frame(); f.Phase != health.Paused {
		t.Fatalf("frame phase = %s, want paused", f.Phase)
	}
	if cs.discoveries != discoveries || len(r.st.Claims()) != 0 {
		t.Fatalf("discoveries %d -> %d, claims %v: a paused worker looks for nothing", discoveries, cs.discoveries, r.st.Claims())
	}
	// Resume: the first step after it looks for work, at once.
	r.addFiles("a")
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "true"); err != nil {
		t.Fatal(err)
	}
	r.wantStep(now.Add(time.Second), worker.LoadModels)
}

// A store that fails the flag read between two discoveries is a store
// failure as any read's: one store_error, a backoff that grows (1 s, 2 s,
// 4 s), no counted error, no discovery; the first read answered makes the
// worker idle again, its backoff started over, and the next discovery
// comes when the poll said.
func TestIdleFlagReadFailureBacksOffWithoutDiscovery(t *testing.T) {
	r, cs := countingRig(t, nil)
	_, now := idleFor(r, cs, t0, at(3*time.Minute))
	// Up to a discovery at the 30 s cap (the next comes 30 s later), then
	// 5 s on.
	var d time.Time
	for n := cs.discoveries; cs.discoveries == n; {
		d = now
		now = r.wantStep(now, worker.Wait).Until
	}
	for now.Before(d.Add(5 * time.Second)) {
		now = r.wantStep(now, worker.Wait).Until
	}
	discoveries := cs.discoveries
	errs := len(r.ev.of(event.StoreError))
	r.st.SetFault(memstore.Down)
	var waits []time.Duration
	for i := 0; i < 3; i++ {
		s := r.wantStep(now, worker.Wait)
		if r.w.Phase() != health.BackingOff {
			t.Fatalf("phase with the store down = %s, want backing_off", r.w.Phase())
		}
		waits = append(waits, s.Until.Sub(now))
		now = s.Until
	}
	if waits[0] != time.Second || waits[1] != 2*time.Second || waits[2] != 4*time.Second {
		t.Fatalf("backoff with the store down = %v, want [1s 2s 4s]", waits)
	}
	if n := len(r.ev.of(event.StoreError)) - errs; n != 3 {
		t.Fatalf("%d store_error events for 3 failed reads", n)
	}
	if tel := r.w.Telemetry(); tel.Errors != 0 || tel.ConsecutiveErrors != 0 {
		t.Fatalf("telemetry %+v: a failed flag read is no counted error", tel)
	}
	r.st.SetFault(memstore.Healthy)
	s := r.wantStep(now, worker.Wait)
	if r.w.Phase() != health.Idle || !now.Before(d.Add(30*time.Second)) {
		t.Fatalf("phase %s at %s after the store came back, want idle before the next discovery at %s",
			r.w.Phase(), now.Sub(t0), d.Add(30*time.Second).Sub(t0))
	}
	if cs.discoveries != discoveries {
		t.Fatalf("discoveries %d -> %d during and right after the outage", discoveries, cs.discoveries)
	}
	// The answered read started the store's backoff over.
	r.st.SetFault(memstore.Down)
	now = s.Until
	if w := r.wantStep(now, worker.Wait).Until.Sub(now); w != time.Second {
		t.Fatalf("a failed read after an answered one waits %s, want 1s", w)
	}
	r.st.SetFault(memstore.Healthy)
	got, _ := idleFor(r, cs, now.Add(time.Second), d.Add(31*time.Second))
	if len(got) != 1 || got[0] != d.Add(30*time.Second).Sub(t0) {
		t.Fatalf("discoveries after the outage at %v, want one at %s", got, d.Add(30*time.Second).Sub(t0))
	}
}
