package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

type fakeProcs struct{ spawns, kills int }

func (p *fakeProcs) Spawn(string, uint64) (int, error) { p.spawns++; return 100 + p.spawns, nil }
func (p *fakeProcs) Signal(_ string, _ uint64, sig supervisor.Signal) {
	if sig == supervisor.Kill {
		p.kills++
	}
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

func newNode(t *testing.T, workers int, mod func(*node.Config)) (*node.Node, *memstore.Store, *fakeProcs, *recorder) {
	t.Helper()
	cfg := node.DefaultConfig("inst-a", "node-a", workers)
	if mod != nil {
		mod(&cfg)
	}
	st, procs, ev := memstore.New(1), &fakeProcs{}, &recorder{}
	n, err := node.New(cfg, procs, st, ev)
	if err != nil {
		t.Fatalf("node.New: %v", err)
	}
	return n, st, procs, ev
}

func TestCleanupHookDeletesExpiredClaims(t *testing.T) {
	ctx := context.Background()
	n, st, _, ev := newNode(t, 1, nil)
	var files []store.File
	for _, k := range []string{"f1", "f2", "f3"} {
		files = append(files, store.File{Key: k, Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true})
	}
	if _, err := st.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	other := "inst-b/worker:discovery:0" // a dead host's worker: nobody renews it
	for _, c := range []store.Claim{
		{FileKey: "f1", WorkerID: other, ClaimedAt: t0, LeaseUntil: at(20 * time.Second)},
		{FileKey: "f2", WorkerID: other, ClaimedAt: t0, LeaseUntil: at(60 * time.Second)},
		{FileKey: "f3", WorkerID: n.Sup.WorkerID("worker:discovery:0"), ClaimedAt: t0, LeaseUntil: at(20 * time.Second)},
	} {
		if _, err := st.Claim(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	n.Start(ctx, t0)
	for d := time.Second; d < 30*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if _, ok := st.ClaimOf("f1"); !ok {
		t.Fatal("claim removed before the cleanup period")
	}
	n.Tick(ctx, at(30*time.Second))
	if _, ok := st.ClaimOf("f1"); ok {
		t.Fatal("expired claim not cleaned up")
	}
	if _, ok := st.ClaimOf("f2"); !ok {
		t.Fatal("live claim removed")
	}
	// f3 belongs to a live local worker: its lease was renewed, so it stays.
	if c, ok := st.ClaimOf("f3"); !ok || !c.LeaseUntil.After(at(30*time.Second)) {
		t.Fatalf("renewed claim = %+v %v", c, ok)
	}
	le := ev.of(event.LeaseExpired)
	if len(le) != 1 || le[0].File != "f1" || le[0].Worker != other || le[0].Instance != "inst-a" || le[0].Reason != "lease expired" {
		t.Fatalf("lease_expired events = %+v", le)
	}
	// A failing cleanup is counted by the monitor.
	st.SetFault(memstore.Down)
	n.Tick(ctx, at(60*time.Second))
	st.SetFault(memstore.Healthy)
	if n.Mon.Stats().HookFails != 1 {
		t.Fatalf("HookFails = %d", n.Mon.Stats().HookFails)
	}
	found := false
	for _, e := range ev.of(event.StoreError) {
		if strings.Contains(e.Reason, "cleanup claims") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no store_error for the failed cleanup: %+v", ev.of(event.StoreError))
	}
}

// failingSettle is a store whose cleanup deletes the claims and then fails
// (settling after the deletes committed): it answers both.
type failingSettle struct{ *memstore.Store }

func (s failingSettle) CleanupClaims(ctx context.Context, expiredBefore time.Time) ([]store.Claim, error) {
	removed, err := s.Store.CleanupClaims(ctx, expiredBefore)
	if err != nil {
		return nil, err
	}
	return removed, errors.New("settle waits: disk full")
}

// Claims a failing cleanup deleted all the same are reported: their
// lease_expired events are not lost with the error.
func TestCleanupReportsDeletesThatCameWithAnError(t *testing.T) {
	ctx := context.Background()
	st, ev := memstore.New(1), &recorder{}
	n, err := node.New(node.DefaultConfig("inst-a", "node-a", 1), &fakeProcs{}, failingSettle{st}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpsertFiles(ctx, []store.File{{Key: "f1", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	other := "inst-b/worker:discovery:0"
	if _, err := st.Claim(ctx, store.Claim{FileKey: "f1", WorkerID: other, ClaimedAt: t0, LeaseUntil: at(20 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	n.Start(ctx, t0)
	for d := time.Second; d <= 30*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if _, ok := st.ClaimOf("f1"); ok {
		t.Fatal("expired claim not cleaned up")
	}
	if le := ev.of(event.LeaseExpired); len(le) != 1 || le[0].File != "f1" || le[0].Worker != other {
		t.Fatalf("lease_expired events = %+v, want f1's", le)
	}
	if n.Mon.Stats().HookFails != 1 {
		t.Fatalf("HookFails = %d, want the failure counted", n.Mon.Stats().HookFails)
	}
}

func TestSetEnabled(t *testing.T) {
	ctx := context.Background()
	n, st, _, _ := newNode(t, 1, nil)
	if err := n.SetEnabled(ctx, false); err != nil {
		t.Fatal(err)
	}
	if v, ok := st.MetaValue(store.MetaWorkerEnabled); !ok || v != "false" {
		t.Fatalf("worker_enabled = %q %v", v, ok)
	}
	if err := n.SetEnabled(ctx, true); err != nil {
		t.Fatal(err)
	}
	if v, _ := st.MetaValue(store.MetaWorkerEnabled); v != "true" {
		t.Fatalf("worker_enabled = %q", v)
	}
	st.SetFault(memstore.Down)
	if err := n.SetEnabled(ctx, false); err == nil || !errors.Is(err, memstore.ErrDown) {
		t.Fatalf("SetEnabled with the store down = %v", err)
	}
	if v, _ := st.MetaValue(store.MetaWorkerEnabled); v != "true" {
		t.Fatalf("worker_enabled changed despite the fault: %q", v)
	}
}

func TestGPUProbed(t *testing.T) {
	ctx := context.Background()
	n, st, _, _ := newNode(t, 1, nil)
	if err := n.GPUProbed(ctx, t0, true, ""); err != nil {
		t.Fatal(err)
	}
	key := store.GPUHealthKey("node-a") // this host's: gpu:health:node-a
	v, ok, err := st.GetMeta(ctx, key)
	if err != nil || !ok {
		t.Fatalf("%s = %q %v %v", key, v, ok, err)
	}
	if avail, why := gpu.Available(v, ok, at(10*time.Second), gpu.StaleAfter); !avail {
		t.Fatalf("fresh ok probe unavailable: %s", why)
	}
	if avail, _ := gpu.Available(v, ok, at(61*time.Second), gpu.StaleAfter); avail {
		t.Fatal("stale probe available")
	}
	if err := n.GPUProbed(ctx, at(time.Minute), false, "driver gone"); err != nil {
		t.Fatal(err)
	}
	v, ok = st.MetaValue(key)
	if avail, why := gpu.Available(v, ok, at(time.Minute), gpu.StaleAfter); avail || !strings.Contains(why, "driver gone") {
		t.Fatalf("down probe: %v %q", avail, why)
	}
	// Another host sharing the store probes its own GPU into its own key.
	other, err := node.New(node.DefaultConfig("inst-b", "node-b", 1), &fakeProcs{}, st, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.GPUProbed(ctx, at(time.Minute), true, ""); err != nil {
		t.Fatal(err)
	}
	if v2, _ := st.MetaValue(key); v2 != v {
		t.Fatalf("node-b's probe changed node-a's GPU health: %q, was %q", v2, v)
	}
	if _, ok := st.MetaValue(store.GPUHealthKey("node-b")); !ok {
		t.Fatal("node-b's probe not recorded under its own key")
	}
	st.SetFault(memstore.Down)
	if err := n.GPUProbed(ctx, at(2*time.Minute), true, ""); !errors.Is(err, memstore.ErrDown) {
		t.Fatalf("GPUProbed with the store down = %v", err)
	}
}

func TestResetResumesPolling(t *testing.T) {
	ctx := context.Background()
	n, _, procs, _ := newNode(t, 1, func(c *node.Config) { c.Supervisor.Restart.WindowLimit = 1 })
	id := "worker:discovery:0"
	n.Start(ctx, t0)
	n.Sup.Exited(ctx, id, 1, 1, at(time.Second))
	n.Tick(ctx, at(2*time.Second)) // restart, gen 2
	n.Sup.Exited(ctx, id, 2, 1, at(2500*time.Millisecond))
	n.Tick(ctx, at(3*time.Second))
	if s, _ := n.Mon.Status(id); s != health.Failed || n.Mon.Polling(id) {
		t.Fatalf("monitor status %s polling %v", s, n.Mon.Polling(id))
	}
	if err := n.Reset(ctx, id, at(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !n.Mon.Polling(id) || procs.spawns != 3 {
		t.Fatalf("after Reset: polling %v spawns %d", n.Mon.Polling(id), procs.spawns)
	}
	n.Tick(ctx, at(5*time.Second))
	if s, _ := n.Mon.Status(id); s != health.Pending {
		t.Fatalf("monitor status after Reset = %s", s)
	}
	if err := n.Reset(ctx, "nope", at(5*time.Second)); err == nil {
		t.Fatal("Reset of an unknown component succeeded")
	}
}

func TestNextWakeIncludesRestartDeadline(t *testing.T) {
	ctx := context.Background()
	n, _, _, _ := newNode(t, 1, func(c *node.Config) { c.Supervisor.Restart.BackoffBase = 100 * time.Millisecond })
	n.Start(ctx, t0)
	if w := n.NextWake(); !w.Equal(at(time.Second)) {
		t.Fatalf("NextWake = %s, want 1s", w.Sub(t0))
	}
	n.Sup.Exited(ctx, "worker:discovery:0", 1, 1, at(200*time.Millisecond))
	if w := n.NextWake(); !w.Equal(at(300 * time.Millisecond)) {
		t.Fatalf("NextWake = %s, want the restart at 300ms", w.Sub(t0))
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := node.New(node.Config{Supervisor: supervisor.DefaultConfig("i", "n", 1), CleanupPeriod: 0}, &fakeProcs{}, memstore.New(1), nil); err == nil {
		t.Fatal("cleanup period 0 accepted")
	}
	cfg := node.DefaultConfig("", "n", 1)
	if _, err := node.New(cfg, &fakeProcs{}, memstore.New(1), nil); err == nil {
		t.Fatal("empty instance accepted")
	}
}

// The history-retention hook deletes rows older than the retention once per
// period (a quarter of a short retention), keeps newer ones, and is off at 0.
func TestHistoryRetentionHook(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		retention time.Duration
		period    time.Duration // first run, one period after the first tick
		kept      int           // of rows at t0−3h, t0−90m, t0−1s, t0
	}{
		{2 * time.Hour, 30 * time.Minute, 2},
		{8 * time.Hour, node.HistoryPrunePeriod, 4},
		{0, 0, 4},
	} {
		n, st, _, _ := newNode(t, 1, func(c *node.Config) { c.HistoryRetention = tc.retention })
		var rows []store.HistoryRow
		for _, d := range []time.Duration{-3 * time.Hour, -90 * time.Minute, -time.Second, 0} {
			rows = append(rows, store.HistoryRow{At: at(d), Instance: "old", Component: "worker:discovery:0", Status: "healthy"})
		}
		if err := st.AppendHistory(ctx, rows); err != nil {
			t.Fatal(err)
		}
		old := func() int {
			k := 0
			for _, r := range st.History() {
				if r.Instance == "old" {
					k++
				}
			}
			return k
		}
		n.Start(ctx, t0)
		if tc.period > 0 {
			n.Tick(ctx, at(tc.period-time.Second))
			if old() != 4 {
				t.Fatalf("retention %s: pruned before its period", tc.retention)
			}
		}
		n.Tick(ctx, at(max(tc.period, time.Hour)))
		// The hook runs once, at this tick: the cut is now−retention.
		if got := old(); got != tc.kept {
			t.Fatalf("retention %s: %d old rows kept, want %d", tc.retention, got, tc.kept)
		}
	}
}

// After the store failed for this main process, no lease is expired for a
// whole lease_ttl: every owner's renewals failed alike, and a lease that ran
// out meanwhile may be a live worker's, renewed within lease_ttl/3 of the
// store's return. A claim whose file is no longer work is removed all the
// same; the abandoned lease goes at the first cleanup after the grace.
func TestCleanupSparesLeasesAfterStoreTrouble(t *testing.T) {
	ctx := context.Background()
	n, st, _, ev := newNode(t, 1, nil)
	tagged := store.File{Key: "done", Size: 1, MtimeMs: 1, NeedsTagging: false, Tagged: true, IsValid: true}
	if _, err := st.UpsertFiles(ctx, []store.File{
		{Key: "f1", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true},
		{Key: "f2", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}, tagged,
	}); err != nil {
		t.Fatal(err)
	}
	other := "inst-b/worker:discovery:0"
	if _, err := st.Claim(ctx, store.Claim{FileKey: "f1", WorkerID: other, ClaimedAt: t0, LeaseUntil: at(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	n.Start(ctx, t0)
	// The store is down from 20 s to 80 s: b's lease runs out at 30 s.
	for d := time.Second; d <= 100*time.Second; d += time.Second {
		switch d {
		case 20 * time.Second:
			st.SetFault(memstore.Down)
		case 80 * time.Second:
			st.SetFault(memstore.Healthy)
			// A claim on a file that is no longer work, left by b.
			if _, err := st.Claim(ctx, store.Claim{FileKey: "f2", WorkerID: other, ClaimedAt: at(80 * time.Second), LeaseUntil: at(110 * time.Second)}); err != nil {
				t.Fatal(err)
			}
			if err := st.Quarantine(ctx, "f2", "crashed a worker"); err != nil {
				t.Fatal(err)
			}
		}
		n.Tick(ctx, at(d))
	}
	// Cleanup ran at 90 s, within lease_ttl of the last failure (79 s).
	if _, ok := st.ClaimOf("f1"); !ok {
		t.Fatal("a lease that ran out during the outage was expired before its owner could renew it")
	}
	if _, ok := st.ClaimOf("f2"); ok {
		t.Fatal("a claim on a quarantined file was kept")
	}
	for d := 101 * time.Second; d <= 120*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if _, ok := st.ClaimOf("f1"); ok {
		t.Fatal("the abandoned lease was not expired after the grace")
	}
	var expired []string
	for _, e := range ev.of(event.LeaseExpired) {
		expired = append(expired, e.File)
	}
	if len(expired) != 2 || expired[0] != "f2" || expired[1] != "f1" {
		t.Fatalf("lease_expired events for %v, want f2 (at the 90 s cleanup) then f1 (at 120 s)", expired)
	}
	if le := ev.of(event.LeaseExpired); le[0].Reason != "file no longer work" || le[1].Reason != "lease expired" {
		t.Fatalf("lease_expired reasons %q, %q", le[0].Reason, le[1].Reason)
	}
	// Their causes, counted by the driver (nomarr_claims_released_total).
	if le := ev.of(event.LeaseExpired); le[0].Cause != node.CleanupNotWork || le[1].Cause != node.CleanupLeaseExpired {
		t.Fatalf("lease_expired causes %q, %q", le[0].Cause, le[1].Cause)
	}
}
