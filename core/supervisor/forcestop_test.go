package supervisor_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// lockedStore refuses claim releases and restart-state saves while their
// flag is set (another process holding the write lock), and counts the
// attempts.
type lockedStore struct {
	*memstore.Store
	failRelease, failSave bool
	// failure, when set, is the error of the refused writes instead of a
	// lock's.
	failure         error
	releases, saves map[string]int // attempts by worker id / restart key
}

func newLockedStore() *lockedStore {
	return &lockedStore{Store: memstore.New(1), releases: map[string]int{}, saves: map[string]int{}}
}

func (l *lockedStore) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	l.releases[workerID]++
	if l.failRelease {
		if l.failure != nil {
			return nil, l.failure
		}
		return nil, errors.New("release claims: database is locked")
	}
	return l.Store.ReleaseWorker(ctx, workerID, death, crash)
}

func (l *lockedStore) SaveRestart(ctx context.Context, key string, st restart.State) error {
	l.saves[key]++
	if l.failSave {
		if l.failure != nil {
			return l.failure
		}
		return errors.New("save restart state: database is locked")
	}
	return l.Store.SaveRestart(ctx, key, st)
}

func (l *lockedStore) attempts() (releases, saves int) {
	for _, n := range l.releases {
		releases += n
	}
	for _, n := range l.saves {
		saves += n
	}
	return releases, saves
}

// forceRig is a supervisor of two workers on a lockedStore.
func forceRig(t *testing.T, mod func(*supervisor.Config)) (*supervisor.Supervisor, *lockedStore, *fakeProcs, *recorder) {
	t.Helper()
	cfg := supervisor.DefaultConfig("inst-a", "node-a", 2)
	if mod != nil {
		mod(&cfg)
	}
	ls, procs, ev := newLockedStore(), &fakeProcs{}, &recorder{}
	sup, err := supervisor.New(cfg, procs, ls, ev)
	if err != nil {
		t.Fatal(err)
	}
	return sup, ls, procs, ev
}

func claimFor(t *testing.T, ls *lockedStore, file, worker string) {
	t.Helper()
	ctx := context.Background()
	if _, err := ls.UpsertFiles(ctx, []store.File{{Key: file, Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Claim(ctx, store.Claim{FileKey: file, WorkerID: worker, ClaimedAt: t0, LeaseUntil: at(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
}

func gen(t *testing.T, sup *supervisor.Supervisor, id string) uint64 {
	t.Helper()
	in, ok := sup.Info(id)
	if !ok {
		t.Fatalf("no component %s", id)
	}
	return in.Gen
}

// A stop whose workers are gone but whose store writes the store refuses
// (w0's claim release, w1's failed restart state) waits, and says so;
// ForceStop gives those writes up: Done at once, no write retried, and
// Abandoned names what was left. The claim stays in the store, for its
// lease to expire.
func TestForceStopGivesUpPendingStoreWrites(t *testing.T) {
	ctx := context.Background()
	sup, ls, procs, ev := forceRig(t, func(c *supervisor.Config) { c.Restart.WindowLimit = 1 })
	claimFor(t, ls, "f0", sup.WorkerID(w0))
	sup.Start(ctx, t0)
	sup.Exited(ctx, w1, 1, 1, at(time.Second)) // restart 1: granted and saved
	sup.Tick(ctx, at(2*time.Second))           // w1 generation 2
	ls.failSave = true
	sup.Exited(ctx, w1, 2, 1, at(3*time.Second)) // given up on: its failed state is not saved
	if _, ok := sup.WaitingOnStore(); ok {
		t.Fatal("waiting on the store before any stop")
	}
	sup.Stop(at(4 * time.Second))
	if _, ok := sup.WaitingOnStore(); ok {
		t.Fatal("waiting on the store alone while w0 still runs")
	}
	ls.failRelease = true
	sup.Exited(ctx, w0, 1, 0, at(5*time.Second))
	sup.Tick(ctx, at(6*time.Second))
	if sup.Done() {
		t.Fatal("stop done with a release and a restart state unwritten")
	}
	w, ok := sup.WaitingOnStore()
	if !ok || !slices.Equal(w.Releases, []string{w0}) || !slices.Equal(w.RestartStates, []string{w1}) {
		t.Fatalf("WaitingOnStore = %+v %v, want the release of %s and the restart state of %s", w, ok, w0, w1)
	}
	if !sup.Abandoned().Empty() {
		t.Fatalf("Abandoned before any force = %+v", sup.Abandoned())
	}

	calls := len(procs.calls)
	sup.ForceStop(at(7 * time.Second))
	if !sup.Done() || !sup.Forced() {
		t.Fatalf("after ForceStop: Done=%v Forced=%v, want both", sup.Done(), sup.Forced())
	}
	if len(procs.calls) != calls {
		t.Fatalf("signals with no worker running: %+v", procs.calls[calls:])
	}
	if _, ok := sup.WaitingOnStore(); ok {
		t.Fatal("still waiting on the store after the force")
	}
	want := supervisor.Abandoned{Releases: []string{w0}, WorkerIDs: []string{sup.WorkerID(w0)}, RestartStates: []string{w1}}
	if got := sup.Abandoned(); !slices.Equal(got.Releases, want.Releases) || !slices.Equal(got.WorkerIDs, want.WorkerIDs) ||
		!slices.Equal(got.RestartStates, want.RestartStates) {
		t.Fatalf("Abandoned = %+v, want %+v", got, want)
	}
	rel, saves := ls.attempts()
	for d := 8 * time.Second; d < time.Minute; d += time.Second {
		sup.Tick(ctx, at(d))
	}
	if r, s := ls.attempts(); r != rel || s != saves {
		t.Fatalf("writes retried after the force: releases %d -> %d, saves %d -> %d", rel, r, saves, s)
	}
	if _, ok := ls.ClaimOf("f0"); !ok {
		t.Fatal("the left claim is gone: it should wait for its lease to expire")
	}
	if f, _ := ls.Peek("f0"); f.CrashCount != 0 {
		t.Fatalf("crash counted for a forced stop: %+v", f)
	}
	if st := ev.of(event.Stop, ""); len(st) != 2 || st[0].Reason != "" || st[1].Reason != "forced" {
		t.Fatalf("stop events = %+v, want the stop, then the forced one", st)
	}
	for _, c := range procs.calls {
		if c.op == "spawn" && c.comp == w1 && c.gen > 2 {
			t.Fatalf("a failed worker was spawned again: %+v", procs.calls)
		}
	}

	// Idempotent: a second force changes nothing and says nothing.
	events := len(ev.events)
	sup.ForceStop(at(time.Minute))
	if len(ev.events) != events || len(procs.calls) != calls || !sup.Done() {
		t.Fatalf("second ForceStop: events %+v, calls %+v", ev.events[events:], procs.calls[calls:])
	}
}

// Forced during the grace, the stop kills every live worker at once
// (SIGKILL, a kill event "forced stop"); each still tries its release once
// on its exit, and a release that fails is given up, not retried.
func TestForceStopKillsRunningWorkers(t *testing.T) {
	ctx := context.Background()
	sup, ls, procs, ev := forceRig(t, nil)
	claimFor(t, ls, "f0", sup.WorkerID(w0))
	claimFor(t, ls, "f1", sup.WorkerID(w1))
	sup.Start(ctx, t0)
	sup.Stop(at(time.Second))
	for _, id := range []string{w0, w1} {
		if n := procs.signals(id, supervisor.Term); n != 1 {
			t.Fatalf("SIGTERMs to %s = %d", id, n)
		}
	}
	sup.ForceStop(at(2 * time.Second)) // well within stop_grace
	for _, id := range []string{w0, w1} {
		if n := procs.signals(id, supervisor.Kill); n != 1 {
			t.Fatalf("SIGKILLs to %s = %d, want 1 at the force", id, n)
		}
		k := ev.of(event.Kill, id)
		if len(k) != 1 || k[0].Reason != "forced stop" || k[0].Cause != supervisor.KillForcedStop || k[0].PID == 0 || !k[0].T.Equal(at(2*time.Second)) {
			t.Fatalf("kill events of %s = %+v, want one, reason \"forced stop\", with its pid", id, k)
		}
	}
	if sup.Done() {
		t.Fatal("done before the killed workers' exits")
	}
	ls.failRelease = true
	sup.Exited(ctx, w0, gen(t, sup, w0), -1, at(2100*time.Millisecond))
	if sup.Done() {
		t.Fatal("done while w1 still runs")
	}
	ls.failRelease = false
	sup.Exited(ctx, w1, gen(t, sup, w1), -1, at(2200*time.Millisecond))
	if !sup.Done() {
		t.Fatal("not done once every killed worker exited")
	}
	if ls.releases[sup.WorkerID(w0)] != 1 || ls.releases[sup.WorkerID(w1)] != 1 {
		t.Fatalf("release attempts %v, want one each", ls.releases)
	}
	if a := sup.Abandoned(); !slices.Equal(a.Releases, []string{w0}) || len(a.RestartStates) != 0 {
		t.Fatalf("Abandoned = %+v, want w0's release only", a)
	}
	if _, ok := ls.ClaimOf("f1"); ok {
		t.Fatal("w1's claim not released although the store took it")
	}
	if e := ev.of(event.Exit, w0); len(e) != 1 || e[0].Reason != "forced stop" {
		t.Fatalf("exit events of w0 = %+v", e)
	}
	for d := 3 * time.Second; d < 30*time.Second; d += time.Second {
		sup.Tick(ctx, at(d)) // past the grace: no second kill, no retry, no restart
	}
	if n := procs.signals(w0, supervisor.Kill); n != 1 || ls.releases[sup.WorkerID(w0)] != 1 {
		t.Fatalf("after the grace: %d kills of w0, %d releases", n, ls.releases[sup.WorkerID(w0)])
	}
	if n := len(ev.of(event.RestartScheduled, "")); n != 0 {
		t.Fatalf("%d restarts scheduled during a forced stop", n)
	}
}

// A force before any stop is a stop: the pending restart timer is
// cancelled before any signal, no SIGTERM is sent, the live worker is
// killed, and nothing is spawned again.
func TestForceStopBeforeStopIsAStop(t *testing.T) {
	ctx := context.Background()
	sup, _, procs, ev := forceRig(t, nil)
	sup.Start(ctx, t0)
	sup.Exited(ctx, w0, 1, 1, at(time.Second)) // restart pending at 2 s
	if sup.PendingTimers(w0) != 1 {
		t.Fatal("no pending restart before the force")
	}
	procs.onSignal = func(comp string, _ uint64, sig supervisor.Signal) {
		if sup.PendingTimers(w0) != 0 {
			t.Errorf("%s to %s sent while w0's restart is pending", sig, comp)
		}
	}
	sup.ForceStop(at(1500 * time.Millisecond))
	if !sup.Stopping() || !sup.Forced() {
		t.Fatalf("Stopping=%v Forced=%v", sup.Stopping(), sup.Forced())
	}
	if procs.signals(w1, supervisor.Term) != 0 || procs.signals(w1, supervisor.Kill) != 1 {
		t.Fatalf("signals to w1: %+v, want one SIGKILL", procs.calls)
	}
	if st := ev.of(event.Stop, ""); len(st) != 1 || st[0].Reason != "forced" {
		t.Fatalf("stop events = %+v, want one, forced", st)
	}
	sup.Exited(ctx, w1, 1, -1, at(1600*time.Millisecond))
	for d := 2 * time.Second; d < time.Minute; d += time.Second {
		sup.Tick(ctx, at(d))
	}
	if !sup.Done() || procs.count("spawn", w0) != 1 || procs.count("spawn", w1) != 1 {
		t.Fatalf("Done=%v, calls %+v: want done and no respawn", sup.Done(), procs.calls)
	}
	if !sup.Abandoned().Empty() {
		t.Fatalf("Abandoned = %+v with a store that took every write", sup.Abandoned())
	}
}

// The wait on the store ends by itself when the store comes back: the
// releases are written, and the stop is done without a force.
func TestWaitingOnStoreEndsWhenTheStoreAnswers(t *testing.T) {
	ctx := context.Background()
	sup, ls, _, _ := forceRig(t, nil)
	claimFor(t, ls, "f0", sup.WorkerID(w0))
	sup.Start(ctx, t0)
	sup.Stop(at(time.Second))
	ls.failRelease = true
	sup.Exited(ctx, w0, 1, 0, at(2*time.Second))
	if _, ok := sup.WaitingOnStore(); ok {
		t.Fatal("waiting on the store alone while w1 runs")
	}
	sup.Exited(ctx, w1, 1, 0, at(2*time.Second))
	w, ok := sup.WaitingOnStore()
	if !ok || len(w.Releases) != 2 || len(w.RestartStates) != 0 {
		t.Fatalf("WaitingOnStore = %+v %v, want both releases", w, ok)
	}
	ls.failRelease = false
	sup.Tick(ctx, at(3*time.Second))
	if _, ok := sup.WaitingOnStore(); ok || !sup.Done() {
		t.Fatalf("store back: waiting %v, done %v", ok, sup.Done())
	}
	if _, ok := ls.ClaimOf("f0"); ok {
		t.Fatal("claim not released")
	}
}
