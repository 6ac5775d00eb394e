package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/supervisor"
)

// loggedStore appends "store" to log on every call the node's tick makes
// to renew its name and its workers' leases; loggedProcs appends each
// signal to the same log.
type loggedStore struct {
	*memstore.Store
	log *[]string
}

func (s loggedStore) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	*s.log = append(*s.log, "store swap "+key)
	return s.Store.SwapMeta(ctx, key, old, value)
}

func (s loggedStore) RenewLeases(ctx context.Context, ids []string, until time.Time) (int, error) {
	*s.log = append(*s.log, "store renew leases")
	return s.Store.RenewLeases(ctx, ids, until)
}

type loggedProcs struct{ log *[]string }

func (p loggedProcs) Spawn(string, uint64) (int, error) { return 100, nil }
func (p loggedProcs) Signal(comp string, _ uint64, sig supervisor.Signal) {
	*p.log = append(*p.log, "signal "+sig.String()+" "+comp)
}

// startWithOneFrame starts n and feeds worker w one idle frame at t.
func startWithOneFrame(n *node.Node, w string, t time.Time) {
	n.Start(context.Background(), t0)
	in, _ := n.Sup.Info(w)
	f := frame.Frame{ComponentID: w, Status: "ok", Phase: health.Idle}
	n.Sup.PipeData(w, in.Gen, frame.Append(nil, &f), t)
}

// A node's tick kills a hung worker before its first store call (the
// renewal of its name): that call may wait on a write lock the hung worker
// holds, which only its death frees.
func TestTickKillsBeforeItsStoreCalls(t *testing.T) {
	var log []string
	st := loggedStore{Store: memstore.New(1), log: &log}
	n, err := node.New(node.DefaultConfig("inst-a", "node-a", 1), loggedProcs{&log}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const w = "worker:discovery:0"
	startWithOneFrame(n, w, at(10*time.Second))
	for d := time.Second; d < 40*time.Second; d += time.Second {
		n.Tick(ctx, at(d))
	}
	log = nil
	n.Tick(ctx, at(40*time.Second)) // the hang (30 s after the last frame) and the name's renewal are both due
	if len(log) < 2 || log[0] != "signal SIGKILL "+w {
		t.Fatalf("tick did %q; want the kill of the hung worker first, then the store calls", log)
	}
}

// The store calls of a turn end at the supervisor's next kill, but never
// less than MinStoreCallBound away, and are unbounded with no live worker.
func TestStoreCallDeadline(t *testing.T) {
	n, _, _, _ := newNode(t, 1, nil)
	if _, ok := n.StoreCallDeadline(t0); ok {
		t.Fatal("a bound before any worker runs")
	}
	startWithOneFrame(n, "worker:discovery:0", at(10*time.Second))
	if d, ok := n.StoreCallDeadline(at(12 * time.Second)); !ok || !d.Equal(at(40*time.Second)) {
		t.Fatalf("StoreCallDeadline = %s, %v; want the hang deadline, 40 s", d.Sub(t0), ok)
	}
	if d, ok := n.StoreCallDeadline(at(45 * time.Second)); !ok || !d.Equal(at(45*time.Second).Add(node.MinStoreCallBound)) {
		t.Fatalf("StoreCallDeadline past the hang deadline = %s, %v; want now + MinStoreCallBound", d.Sub(t0), ok)
	}
}
