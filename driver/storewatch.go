package driver

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// StoreHealth is what the main process's own store calls say of the store:
// every call its node makes (the claim releases, lease renewals and
// cleanups, restart states, the node name, the pause flag, the health
// history), not the API's reads nor the workers' calls (other processes).
//
// Invariants: Errors counts, by operation, the calls that failed as a
// store fault (store.IsFault; a semantic answer such as a lost race is no
// fault), since the process started. WritesFailing is set exactly while
// the last of those calls that writes failed as a fault: Since is when the
// first write of that run of failures failed, Op and Err are the last's.
// A write the store answers (even with a semantic error) clears it. Reads
// leave it alone: while another process holds the SQLite write lock or the
// disk is full, reads still succeed and writes do not. A call that failed
// because its caller's context ended (an API client that disconnected
// during a pause) is not a fault and is not noted; one cut short by the
// main process's own bound on its store calls (the store too slow) is.
type StoreHealth struct {
	Errors        map[string]int64 // by operation (snake_case method name)
	WritesFailing *WriteFailure
}

// WriteFailure is a run of failed store writes of the main process.
type WriteFailure struct {
	Since time.Time // the first failed write of the run
	Op    string    // the last failed write's operation
	Err   string    // and its error
}

// storeWatch keeps a StoreHealth; safe for concurrent use (the API's pause
// and resume call the node off the loop).
type storeWatch struct {
	now     func() time.Time
	mu      sync.Mutex
	errs    map[string]int64
	failing *WriteFailure
}

func newStoreWatch(now func() time.Time) *storeWatch {
	return &storeWatch{now: now, errs: map[string]int64{}}
}

// errStoreTooSlow is the cause of a context the main process bounds its
// own store calls with (Main.storeContext, ForceStop's budget): a call cut
// short by it failed because the store did not answer in time, a fault.
var errStoreTooSlow = errors.New("the store did not answer in time")

// callerGaveUp reports whether a call made with ctx that failed with err
// failed because its caller's context ended (an API client that hung up,
// ForceStop cutting the calls short), not through the store: ctx is done
// for a cause other than the main process's own bound on store calls.
func callerGaveUp(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errStoreTooSlow)
}

// note records the outcome of one call of op made with ctx; write: it
// changes the store. A call whose caller gave up (callerGaveUp) says
// nothing of the store and is not noted: neither counted nor clearing.
func (w *storeWatch) note(ctx context.Context, op string, write bool, err error) {
	if callerGaveUp(ctx, err) {
		return
	}
	fault := store.IsFault(err)
	if !fault && !write {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if fault {
		w.errs[op]++
	}
	switch {
	case !write:
	case !fault:
		w.failing = nil
	case w.failing == nil:
		w.failing = &WriteFailure{Since: w.now(), Op: op, Err: err.Error()}
	default:
		w.failing.Op, w.failing.Err = op, err.Error()
	}
}

// health is a copy of the state now.
func (w *storeWatch) health() StoreHealth {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := StoreHealth{Errors: maps.Clone(w.errs)}
	if w.failing != nil {
		f := *w.failing
		h.WritesFailing = &f
	}
	return h
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
