package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// Woke discounts a loop's lateness from LateAfter on (a quarter of
// hang_after, at least a check_interval), by exactly the lateness, and
// leaves shorter delays alone: they are the scheduler's own.
func TestWokeDiscountsOnlyALateLoop(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		hang      time.Duration
		late      time.Duration
		lateAfter time.Duration
		moved     time.Duration // how far the hang deadline moves
	}{
		{"defaults, 45 s stopped", 30 * time.Second, 45 * time.Second, 7500 * time.Millisecond, 45 * time.Second},
		{"defaults, at LateAfter", 30 * time.Second, 7500 * time.Millisecond, 7500 * time.Millisecond, 7500 * time.Millisecond},
		{"defaults, just under", 30 * time.Second, 7499 * time.Millisecond, 7500 * time.Millisecond, 0},
		{"a short hang_after: the check_interval is the floor", 2 * time.Second, 900 * time.Millisecond, time.Second, 0},
		{"a short hang_after, 1 s late", 2 * time.Second, time.Second, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _, procs, ev := newNode(t, 1, func(c *node.Config) { c.Supervisor.HangAfter, c.Supervisor.StaleAfter = tc.hang, tc.hang/2 })
			if got := n.LateAfter(); got != tc.lateAfter {
				t.Fatalf("LateAfter = %s, want %s", got, tc.lateAfter)
			}
			startWithOneFrame(n, "worker:discovery:0", at(time.Second))
			before, ok := n.Sup.WatchDeadline()
			if !ok || !before.Equal(at(time.Second+tc.hang)) {
				t.Fatalf("hang deadline %s, %v; want %s", before.Sub(t0), ok, time.Second+tc.hang)
			}
			asked := at(2 * time.Second)
			n.Woke(asked, asked, asked.Add(tc.late))
			after, _ := n.Sup.WatchDeadline()
			if moved := after.Sub(before); moved != tc.moved {
				t.Fatalf("the hang deadline moved by %s; want %s", moved, tc.moved)
			}
			if n := len(ev.of("main_paused")); (n == 1) != (tc.moved > 0) || n > 1 {
				t.Fatalf("%d main_paused events", n)
			}
			n.Tick(ctx, asked.Add(tc.late))
			if procs.kills != 0 && tc.moved > 0 {
				t.Fatalf("killed on the tick after a discounted stop")
			}
		})
	}
}

// A main process that was stopped could not see the store meanwhile: a
// lease that ran out during the stall may be a worker's that could not
// renew it (a store outage, a lock held by a stopped worker). So no lease
// is expired for a lease_ttl after the stall, as after a store failure;
// the abandoned lease goes at the first cleanup after that.
func TestCleanupSparesLeasesAfterAStall(t *testing.T) {
	ctx := context.Background()
	n, st, _, ev := newNode(t, 1, nil)
	otherHostClaim(t, st, t0, at(30*time.Second))
	n.Start(ctx, t0)
	for d := time.Second; d <= 20*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	// Stopped from 20 s to 80 s: b's lease ran out at 30 s, and the
	// cleanup due at 30 s runs at 80 s.
	n.Woke(at(20*time.Second), at(21*time.Second), at(80*time.Second))
	for d := 80 * time.Second; d <= 100*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if _, ok := st.ClaimOf("f1"); !ok {
		t.Fatal("a lease that ran out while the main process was stopped was expired as soon as it ran again")
	}
	for d := 101 * time.Second; d <= 120*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if _, ok := st.ClaimOf("f1"); ok {
		t.Fatal("the abandoned lease was not expired after the grace")
	}
	// The cleanups ran at 80 s (due at 30 s) and 110 s, a lease_ttl after
	// the stall's end.
	if le := ev.of(event.LeaseExpired); len(le) != 1 || !le[0].T.Equal(at(110*time.Second)) {
		t.Fatalf("lease_expired events %+v, want one at 110 s", le)
	}
}

// Nor can a main process that just started know the store's recent past: a
// lease that ran out just before may be a worker's that an outage kept from
// renewing it. With a cleanup period shorter than lease_ttl, the first
// cleanups spare it; the first a lease_ttl after the start expires it.
func TestCleanupSparesLeasesAfterStart(t *testing.T) {
	ctx := context.Background()
	n, st, _, ev := newNode(t, 1, func(c *node.Config) { c.CleanupPeriod = 10 * time.Second })
	otherHostClaim(t, st, at(-40*time.Second), at(-time.Second))
	n.Start(ctx, t0)
	for d := time.Second; d <= 29*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if _, ok := st.ClaimOf("f1"); !ok {
		t.Fatal("a lease that ran out before the main process started was expired within lease_ttl of its start")
	}
	for d := 30 * time.Second; d <= 40*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	if le := ev.of(event.LeaseExpired); len(le) != 1 || !le[0].T.Equal(at(30*time.Second)) {
		t.Fatalf("lease_expired events %+v, want one at 30 s", le)
	}
}

// A stall shorter than LateAfter but of a third of lease_ttl or more can
// hide a whole outage from a process that calls the store every third of
// lease_ttl: it grants the cleanup's grace without discounting the death
// rules; a shorter one grants nothing.
func TestWokeGraceAfterAThirdOfTheLease(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		stall time.Duration
		grace bool
	}{{8 * time.Second, true}, {3 * time.Second, false}} {
		n, st, _, ev := newNode(t, 1, func(c *node.Config) {
			c.Supervisor.LeaseTTL, c.CleanupPeriod = 10*time.Second, 10*time.Second
			c.Supervisor.HangAfter, c.Supervisor.StaleAfter = 40*time.Second, 20*time.Second
		})
		if n.LateAfter() != 10*time.Second || n.GraceAfter() != 10*time.Second/3 {
			t.Fatalf("LateAfter %s, GraceAfter %s", n.LateAfter(), n.GraceAfter())
		}
		otherHostClaim(t, st, t0, at(23*time.Second))
		startWithOneFrame(n, "worker:discovery:0", at(time.Second))
		for d := 2 * time.Second; d <= 22*time.Second; d += time.Second {
			n.Tick(ctx, at(d))
		}
		// Stopped until 30 s: the lease ran out at 23 s, the cleanup due at
		// 30 s runs as the process goes on.
		resume := at(30 * time.Second)
		n.Woke(resume.Add(-tc.stall), resume.Add(-tc.stall), resume)
		n.Tick(ctx, resume)
		if _, held := st.ClaimOf("f1"); held != tc.grace {
			t.Errorf("stall %s: claim held after the cleanup at 30 s = %v, want %v", tc.stall, held, tc.grace)
		}
		if p := ev.of("main_paused"); len(p) != 0 {
			t.Errorf("stall %s under LateAfter: main_paused %+v", tc.stall, p)
		}
	}
}

// otherHostClaim adds pending file f1 to st, claimed by another host's
// worker from claimedAt with a lease until until: nobody here renews it.
func otherHostClaim(t *testing.T, st *memstore.Store, claimedAt, until time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.UpsertFiles(ctx, []store.File{{Key: "f1", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, store.Claim{FileKey: "f1", WorkerID: "inst-b/worker:discovery:0", ClaimedAt: claimedAt, LeaseUntil: until}); err != nil {
		t.Fatal(err)
	}
}
