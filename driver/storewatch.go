package driver

import (
	"context"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/storehealth"
)

// storeWatch keeps the storehealth.Watch of the main process's own store
// calls (every call its node makes, not the API's reads nor the workers'
// calls), with the clock that times them; safe for concurrent use (the
// API's pause and resume call the node off the loop). What a call says of
// the store is decided in core/storehealth.
type storeWatch struct {
	now func() time.Time
	mu  sync.Mutex
	w   storehealth.Watch
}

func newStoreWatch(now func() time.Time) *storeWatch {
	return &storeWatch{now: now}
}

// note records the outcome of one call of op made with ctx that returned
// err; write: it changes the store.
func (w *storeWatch) note(ctx context.Context, op string, write bool, err error) {
	o := storehealth.Classify(ctx, err)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w.Note(op, write, o, err, w.now())
}

// health is a copy of the state now.
func (w *storeWatch) health() storehealth.Health {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Health()
}

// watchedStore is a store.Store whose every call is noted in a storeWatch.
type watchedStore struct {
	st store.Store
	w  *storeWatch
}

var _ store.Store = watchedStore{}

// Writes.

func (s watchedStore) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	did, err := s.st.UpsertFiles(ctx, files)
	s.w.note(ctx, "upsert_files", true, err)
	return did, err
}

func (s watchedStore) NextStatSeq(ctx context.Context) (int64, error) {
	n, err := s.st.NextStatSeq(ctx)
	s.w.note(ctx, "next_stat_seq", true, err)
	return n, err
}

func (s watchedStore) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	f, err := s.st.Claim(ctx, c)
	s.w.note(ctx, "claim", true, err)
	return f, err
}

func (s watchedStore) Complete(ctx context.Context, ref store.Ref, c store.Completion) error {
	err := s.st.Complete(ctx, ref, c)
	s.w.note(ctx, "complete", true, err)
	return err
}

func (s watchedStore) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	err := s.st.Release(ctx, ref, upd)
	s.w.note(ctx, "release", true, err)
	return err
}

func (s watchedStore) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	r, err := s.st.ReleaseWorker(ctx, workerID, death, crash)
	s.w.note(ctx, "release_worker", true, err)
	return r, err
}

func (s watchedStore) Quarantine(ctx context.Context, fileKey, reason string) error {
	err := s.st.Quarantine(ctx, fileKey, reason)
	s.w.note(ctx, "quarantine", true, err)
	return err
}

func (s watchedStore) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	err := s.st.KeepClaim(ctx, ref, until)
	s.w.note(ctx, "keep_claim", true, err)
	return err
}

func (s watchedStore) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	n, err := s.st.RenewLeases(ctx, workerIDs, until)
	s.w.note(ctx, "renew_leases", true, err)
	return n, err
}

func (s watchedStore) CleanupClaims(ctx context.Context, expiredBefore time.Time) ([]store.Claim, error) {
	c, err := s.st.CleanupClaims(ctx, expiredBefore)
	s.w.note(ctx, "cleanup_claims", true, err)
	return c, err
}

func (s watchedStore) SetMeta(ctx context.Context, key, value string) error {
	err := s.st.SetMeta(ctx, key, value)
	s.w.note(ctx, "set_meta", true, err)
	return err
}

func (s watchedStore) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	ok, err := s.st.SwapMeta(ctx, key, old, value)
	s.w.note(ctx, "swap_meta", true, err)
	return ok, err
}

func (s watchedStore) SaveRestart(ctx context.Context, key string, st restart.State) error {
	err := s.st.SaveRestart(ctx, key, st)
	s.w.note(ctx, "save_restart", true, err)
	return err
}

func (s watchedStore) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	err := s.st.AppendHistory(ctx, rows)
	s.w.note(ctx, "append_history", true, err)
	return err
}

func (s watchedStore) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	n, err := s.st.PruneHistory(ctx, before)
	s.w.note(ctx, "prune_history", true, err)
	return n, err
}

func (s watchedStore) MarkMissing(ctx context.Context, keys []string) (int, error) {
	n, err := s.st.MarkMissing(ctx, keys)
	s.w.note(ctx, "mark_missing", true, err)
	return n, err
}

func (s watchedStore) RetryFailed(ctx context.Context, keys []string) (int, error) {
	n, err := s.st.RetryFailed(ctx, keys)
	s.w.note(ctx, "retry_failed", true, err)
	return n, err
}

func (s watchedStore) Retag(ctx context.Context, keys []string, version string) (int, error) {
	n, err := s.st.Retag(ctx, keys, version)
	s.w.note(ctx, "retag", true, err)
	return n, err
}

func (s watchedStore) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	n, err := s.st.ForgetMissing(ctx, keys)
	s.w.note(ctx, "forget_missing", true, err)
	return n, err
}

// Reads.

func (s watchedStore) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	f, err := s.st.Discover(ctx, now, after, limit)
	s.w.note(ctx, "discover", false, err)
	return f, err
}

func (s watchedStore) File(ctx context.Context, key string) (store.File, error) {
	f, err := s.st.File(ctx, key)
	s.w.note(ctx, "file", false, err)
	return f, err
}

func (s watchedStore) Counts(ctx context.Context) (store.Counts, error) {
	c, err := s.st.Counts(ctx)
	s.w.note(ctx, "counts", false, err)
	return c, err
}

func (s watchedStore) GetMeta(ctx context.Context, key string) (string, bool, error) {
	v, ok, err := s.st.GetMeta(ctx, key)
	s.w.note(ctx, "get_meta", false, err)
	return v, ok, err
}

func (s watchedStore) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	st, ok, err := s.st.LoadRestart(ctx, key)
	s.w.note(ctx, "load_restart", false, err)
	return st, ok, err
}

func (s watchedStore) ListFiles(ctx context.Context, after string, limit int) ([]store.File, error) {
	f, err := s.st.ListFiles(ctx, after, limit)
	s.w.note(ctx, "list_files", false, err)
	return f, err
}
