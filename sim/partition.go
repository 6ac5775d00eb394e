package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/restart"
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

// hostStore is the store as one host reaches it.
type hostStore struct {
	w    *World
	host string
	main *Instance // the main process whose loop makes the calls; nil for a worker's (storelock.go)
}

var _ store.Store = hostStore{}

// cut is the error of a store call from a cut-off host, or made while a
// hung worker holds the store's lock (storelock.go); nil otherwise.
func (h hostStore) cut() error {
	if h.w.cuts > 0 && h.w.partitioned[h.host] {
		return fmt.Errorf("memstore: store unreachable from %s (partition)", h.host)
	}
	return h.locked()
}

func (h hostStore) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	if err := h.cut(); err != nil {
		return store.Upserted{}, err
	}
	did, err := h.w.Store.UpsertFiles(ctx, files)
	if err := h.reply(err, "upsert_files"); err != nil {
		return store.Upserted{}, err
	}
	return did, nil
}

func (h hostStore) NextStatSeq(ctx context.Context) (int64, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.NextStatSeq(ctx)
	if err := h.reply(err, "next_stat_seq"); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostStore) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	if err := h.cut(); err != nil {
		return nil, err
	}
	return h.w.Store.Discover(ctx, now, after, limit)
}

func (h hostStore) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	if err := h.cut(); err != nil {
		return store.File{}, err
	}
	f, err := h.w.Store.Claim(ctx, c)
	if err := h.reply(err, opClaim, event.Event{File: c.FileKey, Worker: c.WorkerID}); err != nil {
		return store.File{}, err
	}
	return f, nil
}

func (h hostStore) Complete(ctx context.Context, ref store.Ref, c store.Completion) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.Complete(ctx, ref, c), opComplete, event.Event{File: ref.FileKey, Worker: ref.WorkerID})
}

func (h hostStore) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.Release(ctx, ref, upd), opRelease, event.Event{File: ref.FileKey, Worker: ref.WorkerID})
}

func (h hostStore) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.KeepClaim(ctx, ref, until), "keep_claim")
}

func (h hostStore) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	if err := h.cut(); err != nil {
		return nil, err
	}
	rel, err := h.w.Store.ReleaseWorker(ctx, workerID, death, crash)
	wrote := make([]event.Event, len(rel))
	for i, r := range rel {
		wrote[i] = event.Event{File: r.FileKey, Worker: workerID}
	}
	if err := h.reply(err, opReleaseWorker, wrote...); err != nil {
		return nil, err
	}
	return rel, nil
}

func (h hostStore) Quarantine(ctx context.Context, fileKey, reason string) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.Quarantine(ctx, fileKey, reason), "quarantine")
}

func (h hostStore) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.RenewLeases(ctx, workerIDs, until)
	if err := h.reply(err, "renew_leases"); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostStore) CleanupClaims(ctx context.Context, expiredBefore time.Time) ([]store.Claim, error) {
	if err := h.cut(); err != nil {
		return nil, err
	}
	gone, err := h.w.Store.CleanupClaims(ctx, expiredBefore)
	if err != nil {
		return gone, err // deleted claims may come with an error (the port allows it)
	}
	wrote := make([]event.Event, len(gone))
	for i, c := range gone {
		wrote[i] = event.Event{File: c.FileKey, Worker: c.WorkerID}
	}
	if err := h.reply(nil, opCleanup, wrote...); err != nil {
		return nil, err
	}
	return gone, nil
}

func (h hostStore) File(ctx context.Context, key string) (store.File, error) {
	if err := h.cut(); err != nil {
		return store.File{}, err
	}
	return h.w.Store.File(ctx, key)
}

func (h hostStore) Counts(ctx context.Context) (store.Counts, error) {
	if err := h.cut(); err != nil {
		return store.Counts{}, err
	}
	return h.w.Store.Counts(ctx)
}

func (h hostStore) ListFiles(ctx context.Context, after string, limit int) ([]store.File, error) {
	if err := h.cut(); err != nil {
		return nil, err
	}
	return h.w.Store.ListFiles(ctx, after, limit)
}

func (h hostStore) MarkMissing(ctx context.Context, keys []string) (int, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.MarkMissing(ctx, keys)
	if err := h.reply(err, "mark_missing"); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostStore) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.ForgetMissing(ctx, keys)
	if err := h.reply(err, "forget_missing"); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostStore) RetryFailed(ctx context.Context, keys []string) (int, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.RetryFailed(ctx, keys)
	if err := h.reply(err, "retry_failed"); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostStore) Retag(ctx context.Context, keys []string, version string) (int, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.Retag(ctx, keys, version)
	if err := h.reply(err, "retag"); err != nil {
		return 0, err
	}
	return n, nil
}

func (h hostStore) GetMeta(ctx context.Context, key string) (string, bool, error) {
	if err := h.cut(); err != nil {
		return "", false, err
	}
	return h.w.Store.GetMeta(ctx, key)
}

func (h hostStore) SetMeta(ctx context.Context, key, value string) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.SetMeta(ctx, key, value), "set_meta")
}

func (h hostStore) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	if err := h.cut(); err != nil {
		return false, err
	}
	swapped, err := h.w.Store.SwapMeta(ctx, key, old, value)
	if err := h.reply(err, "swap_meta"); err != nil {
		return false, err
	}
	return swapped, nil
}

func (h hostStore) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	if err := h.cut(); err != nil {
		return restart.State{}, false, err
	}
	return h.w.Store.LoadRestart(ctx, key)
}

func (h hostStore) SaveRestart(ctx context.Context, key string, st restart.State) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.SaveRestart(ctx, key, st), "save_restart")
}

func (h hostStore) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	if err := h.cut(); err != nil {
		return err
	}
	return h.reply(h.w.Store.AppendHistory(ctx, rows), "append_history")
}

func (h hostStore) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	if err := h.cut(); err != nil {
		return 0, err
	}
	n, err := h.w.Store.PruneHistory(ctx, before)
	if err := h.reply(err, "prune_history"); err != nil {
		return 0, err
	}
	return n, nil
}
