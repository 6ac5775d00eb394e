package node_test

// The node-name hold (core/node/name.go) under faults: lost answers, clock
// skew, a release while the releaser exits, store failures.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// ambiguousStore applies a SwapMeta and then reports a timeout, once armed:
// what a client sees when its request deadline passes after the server
// committed the write (ArangoDB over HTTP with WithTimeout, a reconnecting
// client, a slow SQLite commit...).
type ambiguousStore struct {
	*memstore.Store
	armed bool
}

func (s *ambiguousStore) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	ok, err := s.Store.SwapMeta(ctx, key, old, value)
	if err == nil && s.armed {
		s.armed = false
		return false, errors.New("context deadline exceeded")
	}
	return ok, err
}

// A renewal whose write landed but whose answer was lost must not make the
// holder believe that another main process took its name: the name still
// holds this process's own instance.
func TestRenewalWithLostAnswerKeepsTheName(t *testing.T) {
	ctx := context.Background()
	st := &ambiguousStore{Store: memstore.New(1)}
	cfg := node.DefaultConfig("a", "shared", 1)
	procs, ev := &fakeProcs{}, &recorder{}
	n, err := node.New(cfg, procs, st, ev)
	if err != nil {
		t.Fatal(err)
	}
	n.Start(ctx, t0)
	if procs.spawns != 1 {
		t.Fatalf("spawns %d", procs.spawns)
	}
	st.armed = true // the renewal at 10 s commits, but its answer is lost
	for d := time.Second; d <= 25*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	raw, _, _ := st.GetMeta(ctx, node.NameKeyPrefix+"shared")
	var h node.NameHolder
	_ = json.Unmarshal([]byte(raw), &h)
	if err := n.Halted(); err != nil {
		t.Fatalf("holder halted although the name still holds its own instance %q: %v", h.Instance, err)
	}
}

// A hold whose holder's wall clock is 25 s behind (less than lease_ttl) is
// renewed every 10 s; a main process elsewhere with the same node name must
// wait for it and then be refused, never take the name from the running,
// renewing holder.
func TestClockSkewNeverTakesARenewingHolder(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	const skew = 25 * time.Second // b's clock is ahead of a's
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	b, pb, _ := nameNode(t, st, "b", nil) // elsewhere: liveness unknown
	for d := time.Second; d <= 60*time.Second; d += time.Second {
		a.Tick(ctx, at(d)) // a runs and renews, on its own clock
		if d == 5*time.Second {
			b.Start(ctx, at(d+skew))
		} else if d > 5*time.Second {
			b.Tick(ctx, at(d+skew))
		}
	}
	if pb.spawns != 0 || a.Halted() != nil {
		t.Fatalf("with a %s clock skew, b spawned %d workers and a (running, renewing) was halted: %v",
			skew, pb.spawns, a.Halted())
	}
}

// A hold handed back (ReleaseName: until 0) is free: "the next start takes
// it at once", even while the process that released it is still exiting
// (the driver releases before reaping, serve before its HTTP shutdown).
func TestReleasedNameTakenWhileReleaserExits(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	stopAndRelease(t, a, at(time.Second))
	// Same host: a's process has not exited yet, so it is Alive.
	b, pb, _ := nameNode(t, st, "b", liveness(node.Alive))
	b.Start(ctx, at(time.Second+time.Millisecond))
	if pb.spawns != 1 || b.Halted() != nil {
		t.Fatalf("released name: b spawned %d, halted %v; want taken at once", pb.spawns, b.Halted())
	}
}

// docs/design.md §7, node.cleanup: leases are not expired while the store has lately
// been failing for this main process, nor for a lease_ttl after its last
// failure. Failures to read the node name are store failures for this
// process too.
func TestNameStoreErrorsCountForCleanupGrace(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	if _, err := st.UpsertFiles(ctx, []store.File{{Key: "f1", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	other := "inst-b/worker:discovery:0" // another host's live worker
	if _, err := st.Claim(ctx, store.Claim{FileKey: "f1", WorkerID: other, ClaimedAt: t0, LeaseUntil: at(40 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	a, _, _ := nameNode(t, st, "a", nil)
	st.SetFault(memstore.Down) // store down from 0 s to 50 s (b cannot renew either)
	a.Start(ctx, t0)
	for d := time.Second; d <= 70*time.Second; d += time.Second {
		if d == 50*time.Second {
			st.SetFault(memstore.Healthy)
		}
		a.Tick(ctx, at(d))
	}
	// Last failure seen by a: the name read at 49 s. Cleanup at 60 s is
	// within lease_ttl (30 s) of it: the lease must be spared.
	if _, ok := st.ClaimOf("f1"); !ok {
		t.Fatal("a lease that ran out during the outage was expired 10 s after the store returned, " +
			"although this main process saw store failures until 49 s (name reads)")
	}
}

// Like the supervisor's lease renewals, a failed renewal of the name is
// retried at the next check, not a whole lease_ttl/3 later: two failed
// renewals in a row (a ~11 s outage) would let the hold lapse.
func TestNameRenewalRetriedAfterFailure(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	for d := time.Second; d <= 12*time.Second; d += time.Second {
		switch d {
		case 10 * time.Second:
			st.SetFault(memstore.Down)
		case 11 * time.Second:
			st.SetFault(memstore.Healthy)
		}
		a.Tick(ctx, at(d))
	}
	raw, _, _ := st.GetMeta(ctx, node.NameKeyPrefix+"shared")
	var h node.NameHolder
	_ = json.Unmarshal([]byte(raw), &h)
	if h.UntilMs < at(40*time.Second).UnixMilli() {
		t.Fatalf("at 12 s (store back since 11 s) the hold still ends at %s: the failed renewal at 10 s is not retried before 20 s",
			time.UnixMilli(h.UntilMs).Sub(t0))
	}
}

// A main process that has not taken its name must not write the restart
// state keyed by that name (it belongs to the holder): a reset through its
// API while it waits is refused (ErrNameNotHeld).
func TestResetWaitsForTheName(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	// a's worker crashes: its restart state is persisted.
	info, _ := a.Sup.Info("worker:discovery:0")
	a.Sup.Exited(ctx, "worker:discovery:0", info.Gen, 1, at(time.Second))
	before, _, _ := st.LoadRestart(ctx, "shared/worker:discovery:0")
	b, _, _ := nameNode(t, st, "b", nil)
	b.Start(ctx, at(2*time.Second)) // waits for a's hold
	if err := b.Reset(ctx, "worker:discovery:0", at(3*time.Second)); !errors.Is(err, node.ErrNameNotHeld) {
		t.Fatalf("reset while waiting = %v, want ErrNameNotHeld", err)
	}
	after, _, _ := st.LoadRestart(ctx, "shared/worker:discovery:0")
	if after.RestartCount != before.RestartCount || after.UpdatedAtWallMs != before.UpdatedAtWallMs {
		t.Fatalf("a main process waiting for its name wrote the holder's restart state: %+v -> %+v", before, after)
	}
}
