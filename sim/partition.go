package sim

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// A partition cuts one host (a node name: its main process, across
// restarts, and its workers) off from the store while the other hosts
// still reach it: fault `{partition: true, instance: NAME, for: D}`. Every
// store call from that host fails, as a network that drops its packets
// would make it fail; the store itself and the other hosts carry on. The
// host cannot be told from a dead one: its leases run out, and another
// host's cleanup hands its files on.

// anyPartitioned reports whether some host is cut off from the store now.
func (w *World) anyPartitioned() bool { return w.cuts > 0 }

// setPartitioned cuts host off from the store, or lets it back.
func (w *World) setPartitioned(host string, cut bool) {
	if w.partitioned[host] == cut {
		return
	}
	w.partitioned[host] = cut
	if cut {
		w.cuts++
	} else {
		w.cuts--
	}
}

// hostStore is the store as one host reaches it: through around.
type hostStore struct {
	w    *World
	host string
	main *Instance // the main process whose loop makes the calls; nil for a worker's (storelock.go)
}

// storeOf is the store as host reaches it, from the loop of main (nil: a
// worker's calls).
func (w *World) storeOf(host string, main *Instance) store.Store {
	return store.Wrap(hostStore{w: w, host: host, main: main}.around)
}

// cut is the error of a store call from a cut-off host, or made while a
// hung worker holds the store's lock (storelock.go); nil otherwise.
func (h hostStore) cut() error {
	if h.w.cuts > 0 && h.w.partitioned[h.host] {
		return fmt.Errorf("memstore: store unreachable from %s (partition)", h.host)
	}
	return h.locked()
}

// around makes one store call from the host: none while it is cut off (or
// the lock is held), and a write's answer may be lost (lostreply.go), with
// the claims it wrote when the checker follows the operation.
func (h hostStore) around(ctx context.Context, op store.Op, call store.Call) error {
	if err := h.cut(); err != nil {
		return err
	}
	err := call(ctx, h.w.Store)
	if !op.Writes {
		return err
	}
	var wrote []event.Event
	if err == nil && followed(op.Name) {
		for _, r := range op.Refs() {
			wrote = append(wrote, event.Event{File: r.FileKey, Worker: r.WorkerID})
		}
	}
	return h.reply(err, op.Name, wrote...)
}

// followed reports whether the checker follows op's lost answers with the
// claims it wrote (onLostReply).
func followed(op string) bool {
	switch op {
	case opClaim, opComplete, opRelease, opReleaseWorker, opCleanup:
		return true
	}
	return false
}
