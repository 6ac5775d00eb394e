package node_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/node"
)

func TestDecideName(t *testing.T) {
	now := at(time.Minute)
	const ttl = 30 * time.Second
	held := func(until time.Duration) *node.NameHolder {
		return &node.NameHolder{Instance: "n:1:1", Host: "h", PID: 1, UntilMs: at(until).UnixMilli()}
	}
	seen := func(raw string, ago time.Duration, h *node.NameHolder) *node.Sighting {
		return &node.Sighting{Raw: raw, Holder: *h, At: now.Add(-ago)}
	}
	other := &node.NameHolder{Instance: "n:3:3", UntilMs: at(2 * time.Minute).UnixMilli()}
	cases := []struct {
		name       string
		cur        *node.NameHolder
		seen       *node.Sighting
		live       node.Liveness
		take       bool
		wait       time.Time
		refuseHint string
	}{
		{name: "free", take: true},
		{name: "own", cur: &node.NameHolder{Instance: "n:2:2", UntilMs: at(2 * time.Minute).UnixMilli()}, live: node.Alive, take: true},
		{name: "handed back, holder still exiting", cur: &node.NameHolder{Instance: "n:1:1", PID: 1}, live: node.Alive, take: true},
		{name: "holder gone", cur: held(2 * time.Minute), live: node.Gone, take: true},
		{name: "holder alive", cur: held(2 * time.Minute), live: node.Alive, refuseHint: "pid 1 on h"},
		{name: "holder alive, hold lapsed", cur: held(0), live: node.Alive, refuseHint: "in use"},
		{name: "elsewhere, lapsed longer than a lease", cur: held(29 * time.Second), take: true},
		{name: "elsewhere, lapsed lately: its clock may be behind", cur: held(55 * time.Second), wait: now.Add(ttl / 3)},
		{name: "elsewhere, first look", cur: held(90 * time.Second), wait: now.Add(ttl / 3)},
		{name: "elsewhere, unchanged for 20s", cur: held(90 * time.Second), seen: seen("r1", 20*time.Second, held(90*time.Second)), wait: now.Add(10 * time.Second)},
		{name: "elsewhere, unchanged for 25s", cur: held(90 * time.Second), seen: seen("r1", 25*time.Second, held(90*time.Second)), wait: now.Add(5 * time.Second)},
		{name: "elsewhere, unchanged for a lease", cur: held(90 * time.Second), seen: seen("r1", ttl, held(90*time.Second)), take: true},
		{name: "elsewhere, renewed while waited for", cur: held(2 * time.Minute), seen: seen("r0", 10*time.Second, held(90*time.Second)), refuseHint: "renewed"},
		{name: "elsewhere, another holder since", cur: other, seen: seen("r0", 25*time.Second, held(90*time.Second)), wait: now.Add(ttl / 3)},
	}
	for _, c := range cases {
		v := node.DecideName("n", c.cur, "r1", c.seen, "n:2:2", now, ttl, c.live)
		if v.Take != c.take || !v.Wait.Equal(c.wait) || (c.refuseHint == "") != (v.Refuse == "") || !strings.Contains(v.Refuse, c.refuseHint) {
			t.Errorf("%s: %+v, want take=%v wait=%v refuse~%q", c.name, v, c.take, c.wait, c.refuseHint)
		}
	}
}

// nameNode is a node of one worker on st under node name "shared".
func nameNode(t *testing.T, st *memstore.Store, instance string, live func(node.NameHolder) node.Liveness) (*node.Node, *fakeProcs, *recorder) {
	t.Helper()
	cfg := node.DefaultConfig(instance, "shared", 1)
	cfg.Self = node.NameHolder{Host: "h", PID: len(instance)}
	cfg.Liveness = live
	procs, ev := &fakeProcs{}, &recorder{}
	n, err := node.New(cfg, procs, st, ev)
	if err != nil {
		t.Fatal(err)
	}
	return n, procs, ev
}

func liveness(l node.Liveness) func(node.NameHolder) node.Liveness {
	return func(node.NameHolder) node.Liveness { return l }
}

func TestSecondMainUnderOneNameRefused(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, pa, _ := nameNode(t, st, "a", liveness(node.Alive))
	a.Start(ctx, t0)
	if pa.spawns != 1 || a.Halted() != nil {
		t.Fatalf("first main: spawns %d, halted %v", pa.spawns, a.Halted())
	}
	b, pb, ev := nameNode(t, st, "b", liveness(node.Alive))
	b.Start(ctx, at(time.Second))
	if pb.spawns != 0 || b.Halted() == nil || !strings.Contains(b.Halted().Error(), `node "shared" is in use by main process a`) {
		t.Fatalf("second main: spawns %d, halted %v", pb.spawns, b.Halted())
	}
	if len(ev.of(event.NodeName)) != 1 {
		t.Fatalf("node_name events = %+v", ev.of(event.NodeName))
	}
	b.Tick(ctx, at(time.Hour)) // halted: it never starts
	if pb.spawns != 0 {
		t.Fatal("a refused main spawned later")
	}
	if a.Halted() != nil {
		t.Fatal("the refusal halted the holder")
	}
}

func TestMainElsewhereWaitedForThenRefused(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	b, pb, _ := nameNode(t, st, "b", nil) // cannot know whether a runs
	b.Start(ctx, at(time.Second))
	if pb.spawns != 0 || b.Halted() != nil {
		t.Fatalf("b: spawns %d, halted %v; want waiting", pb.spawns, b.Halted())
	}
	if w := b.NextWake(); w.After(at(30 * time.Second)) {
		t.Fatalf("b wakes next at %v, after a's hold lapses (30s)", w.Sub(t0))
	}
	for d := time.Second; d <= 40*time.Second; d += time.Second {
		a.Tick(ctx, at(d)) // a runs and renews
		b.Tick(ctx, at(d))
	}
	if pb.spawns != 0 || b.Halted() == nil || !strings.Contains(b.Halted().Error(), "renewed") {
		t.Fatalf("b: spawns %d, halted %v; want refused", pb.spawns, b.Halted())
	}
}

func TestMainElsewhereWaitedForThenTaken(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0) // then a dies on another host: no more renewals
	b, pb, ev := nameNode(t, st, "b", nil)
	for d := time.Second; d <= 31*time.Second; d += time.Second {
		if d == time.Second {
			b.Start(ctx, at(d))
		} else {
			b.Tick(ctx, at(d))
		}
		if d < 30*time.Second && pb.spawns != 0 {
			t.Fatalf("b spawned at %v, before a's hold lapsed", d)
		}
	}
	if pb.spawns != 1 || b.Halted() != nil {
		t.Fatalf("b: spawns %d, halted %v; want started once a's hold lapsed", pb.spawns, b.Halted())
	}
	if w := ev.of(event.NodeName); len(w) != 1 || !strings.HasPrefix(w[0].Reason, "waiting") {
		t.Fatalf("node_name events = %+v", w)
	}
	// a comes back (it was only stopped): its renewal finds the name taken.
	a.Tick(ctx, at(32*time.Second))
	a.Tick(ctx, at(40*time.Second))
	if a.Halted() == nil || !strings.Contains(a.Halted().Error(), "taken over by main process b") {
		t.Fatalf("a: halted %v; want the name lost", a.Halted())
	}
	if b.Halted() != nil {
		t.Fatal("b halted")
	}
}

func TestRestartedMainTakesNameOfGoneOne(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0) // killed right after
	a2, p2, ev := nameNode(t, st, "a2", liveness(node.Gone))
	a2.Start(ctx, at(time.Second))
	if p2.spawns != 1 || a2.Halted() != nil {
		t.Fatalf("restarted main: spawns %d, halted %v", p2.spawns, a2.Halted())
	}
	if w := ev.of(event.NodeName); len(w) != 1 || !strings.Contains(w[0].Reason, "taken over from a") {
		t.Fatalf("node_name events = %+v", w)
	}
}

// stopAndRelease stops n (its one worker exits at once) and hands its name
// back, as the driver does at the end of a graceful stop.
func stopAndRelease(t *testing.T, n *node.Node, now time.Time) {
	t.Helper()
	ctx := context.Background()
	n.Stop(now)
	info, _ := n.Sup.Info("worker:discovery:0")
	n.Sup.Exited(ctx, "worker:discovery:0", info.Gen, 0, now)
	if !n.Sup.Done() {
		t.Fatal("stop not done")
	}
	if err := n.ReleaseName(ctx, now); err != nil {
		t.Fatal(err)
	}
}

func TestReleasedNameTakenAtOnce(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	stopAndRelease(t, a, at(time.Second))
	b, pb, _ := nameNode(t, st, "b", nil) // liveness unknown, but the hold was handed back
	b.Start(ctx, at(2*time.Second))
	if pb.spawns != 1 {
		t.Fatalf("b spawned %d after a released the name", pb.spawns)
	}
}

func TestNameWaitsForStore(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	st.SetFault(memstore.Down)
	a, pa, ev := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	a.Tick(ctx, a.NextWake())
	if pa.spawns != 0 || len(ev.of(event.StoreError)) != 2 {
		t.Fatalf("store down: spawns %d, store errors %d", pa.spawns, len(ev.of(event.StoreError)))
	}
	st.SetFault(memstore.Healthy)
	a.Tick(ctx, a.NextWake())
	if pa.spawns != 1 {
		t.Fatalf("store back: spawns %d", pa.spawns)
	}
}

func TestStopBeforeNameHeld(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	b, pb, _ := nameNode(t, st, "b", nil)
	b.Start(ctx, at(time.Second)) // waiting for a's hold
	b.Stop(at(2 * time.Second))
	b.Tick(ctx, at(time.Minute))
	if pb.spawns != 0 || !b.Sup.Done() {
		t.Fatalf("stopped while waiting: spawns %d, done %v", pb.spawns, b.Sup.Done())
	}
}

// While the store cannot be read, the name cannot be taken and no worker
// can start: they are unhealthy, not pending, and the monitor says so.
func TestWorkersUnhealthyWhileNameUnreadable(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	st.SetFault(memstore.Down)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	if s := a.Status("worker:discovery:0", t0); s != health.Unhealthy {
		t.Fatalf("status with the store down = %s, want unhealthy", s)
	}
	if s, _ := a.Mon.Status("worker:discovery:0"); s != health.Unhealthy {
		t.Fatalf("monitor's status = %q, want unhealthy", s)
	}
	st.SetFault(memstore.Healthy)
	a.Tick(ctx, at(time.Second))
	if s := a.Status("worker:discovery:0", at(time.Second)); s != health.Pending {
		t.Fatalf("status once started = %s, want pending", s)
	}
}

// node.Refusal answers, before a start, what its first look would: a hold of a
// running process refuses; a free, lapsed, unreadable hold, or one whose
// holder is gone or elsewhere (waited for by the start itself), does not.
func TestRefusalBeforeTheStart(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	ttl := 30 * time.Second
	hold := encodeHold(t, node.NameHolder{Instance: "n:1:2", Host: "h", PID: 42, UntilMs: now.Add(ttl).UnixMilli()})
	lapsed := encodeHold(t, node.NameHolder{Instance: "n:1:2", PID: 42, UntilMs: now.Add(-2 * ttl).UnixMilli()})
	alive := func(node.NameHolder) node.Liveness { return node.Alive }
	for _, c := range []struct {
		name, raw string
		live      func(node.NameHolder) node.Liveness
		refused   bool
	}{
		{"free", "", alive, false},
		{"unreadable", "{not json", alive, false},
		{"held by a running process", hold, alive, true},
		{"held, lapsed, by a running process (stopped for a while)", lapsed, alive, true},
		{"held by a process that is gone", hold, func(node.NameHolder) node.Liveness { return node.Gone }, false},
		{"held elsewhere (the start waits)", hold, nil, false},
		{"lapsed elsewhere", lapsed, nil, false},
	} {
		why := node.Refusal("n", c.raw, now, ttl, c.live)
		if (why != "") != c.refused {
			t.Errorf("%s: node.Refusal = %q, want refused %v", c.name, why, c.refused)
		}
		if c.refused && !strings.Contains(why, `node "n" is in use by main process n:1:2`) {
			t.Errorf("%s: %q does not say who holds the name", c.name, why)
		}
	}
}

func encodeHold(t *testing.T, h node.NameHolder) string {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
