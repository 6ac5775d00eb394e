// Package reconnect wraps a store that may be unreachable when the process
// starts: the connection is opened on first use and retried on later calls,
// and until it succeeds every call fails with a fault (store.IsFault), which
// the core treats as service_down — back off, never crash-loop.
package reconnect

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// Opener opens the real store.
type Opener func(ctx context.Context) (store.Store, error)

// Store opens lazily. It is safe for concurrent use; how it opens is
// attempt.go's.
//
// Invariants: at most one connection attempt is in flight, and mu is never
// held during one, so no caller waits on the lock for a dial (see get for
// how long a caller waits at most); st, once set, is never replaced.
type Store struct {
	open     Opener
	minRetry time.Duration
	now      func() time.Time

	mu       sync.Mutex // guards the fields below
	st       store.Store
	lastErr  error     // the last failed attempt's error; nil until one fails and once one succeeds
	lastEnd  time.Time // when the last failed attempt ended: the retry gap counts from here
	inFlight *attempt  // the attempt under way, or nil
	closed   bool
}

// New returns a lazily opened store; a failed open is tried again no
// sooner than minRetry after it ended.
func New(open Opener, minRetry time.Duration) *Store {
	return &Store{open: open, minRetry: minRetry, now: time.Now}
}

// Underlying returns the open store, if any (for optional interfaces).
func (s *Store) Underlying() store.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Close closes the underlying store if it was opened, and cuts short an
// attempt under way (which closes what it opens after this; later calls
// that find no store fail). It does not wait for that attempt.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	st, a := s.st, s.inFlight
	s.mu.Unlock()
	if a != nil {
		a.cancel()
	}
	if c, ok := st.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (s *Store) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	st, err := s.get(ctx)
	if err != nil {
		return store.Upserted{}, err
	}
	return st.UpsertFiles(ctx, files)
}

func (s *Store) NextStatSeq(ctx context.Context) (int64, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.NextStatSeq(ctx)
}

func (s *Store) Discover(ctx context.Context, now time.Time, after string, limit int) ([]store.File, error) {
	st, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.Discover(ctx, now, after, limit)
}

func (s *Store) Claim(ctx context.Context, c store.Claim) (store.File, error) {
	st, err := s.get(ctx)
	if err != nil {
		return store.File{}, err
	}
	return st.Claim(ctx, c)
}

func (s *Store) Complete(ctx context.Context, ref store.Ref, c store.Completion) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.Complete(ctx, ref, c)
}

func (s *Store) Release(ctx context.Context, ref store.Ref, upd *store.FileUpdate) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.Release(ctx, ref, upd)
}

func (s *Store) ReleaseWorker(ctx context.Context, workerID string, death store.Death, crash *store.Crash) ([]store.Released, error) {
	st, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.ReleaseWorker(ctx, workerID, death, crash)
}

func (s *Store) Quarantine(ctx context.Context, fileKey, reason string) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.Quarantine(ctx, fileKey, reason)
}

func (s *Store) KeepClaim(ctx context.Context, ref store.Ref, until time.Time) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.KeepClaim(ctx, ref, until)
}

func (s *Store) RenewLeases(ctx context.Context, workerIDs []string, until time.Time) (int, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.RenewLeases(ctx, workerIDs, until)
}

func (s *Store) CleanupClaims(ctx context.Context, now time.Time) ([]store.Claim, error) {
	st, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.CleanupClaims(ctx, now)
}

func (s *Store) File(ctx context.Context, key string) (store.File, error) {
	st, err := s.get(ctx)
	if err != nil {
		return store.File{}, err
	}
	return st.File(ctx, key)
}

func (s *Store) ListFiles(ctx context.Context, after string, limit int) ([]store.File, error) {
	st, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.ListFiles(ctx, after, limit)
}

func (s *Store) MarkMissing(ctx context.Context, keys []string) (int, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.MarkMissing(ctx, keys)
}

func (s *Store) ForgetMissing(ctx context.Context, keys []string) (int, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.ForgetMissing(ctx, keys)
}

func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	st, err := s.get(ctx)
	if err != nil {
		return store.Counts{}, err
	}
	return st.Counts(ctx)
}

func (s *Store) GetMeta(ctx context.Context, key string) (string, bool, error) {
	st, err := s.get(ctx)
	if err != nil {
		return "", false, err
	}
	return st.GetMeta(ctx, key)
}

func (s *Store) SetMeta(ctx context.Context, key, value string) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.SetMeta(ctx, key, value)
}

func (s *Store) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	st, err := s.get(ctx)
	if err != nil {
		return false, err
	}
	return st.SwapMeta(ctx, key, old, value)
}

func (s *Store) RetryFailed(ctx context.Context, keys []string) (int, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.RetryFailed(ctx, keys)
}

func (s *Store) Retag(ctx context.Context, keys []string, version string) (int, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.Retag(ctx, keys, version)
}

func (s *Store) LoadRestart(ctx context.Context, key string) (restart.State, bool, error) {
	st, err := s.get(ctx)
	if err != nil {
		return restart.State{}, false, err
	}
	return st.LoadRestart(ctx, key)
}

func (s *Store) SaveRestart(ctx context.Context, key string, rs restart.State) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.SaveRestart(ctx, key, rs)
}

func (s *Store) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return st.AppendHistory(ctx, rows)
}

func (s *Store) PruneHistory(ctx context.Context, before time.Time) (int, error) {
	st, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.PruneHistory(ctx, before)
}

// RecentHistory forwards to the underlying store when it can read history.
func (s *Store) RecentHistory(ctx context.Context, limit int) ([]store.HistoryRow, error) {
	st, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	hr, ok := st.(interface {
		RecentHistory(context.Context, int) ([]store.HistoryRow, error)
	})
	if !ok {
		return nil, fmt.Errorf("store cannot read health history")
	}
	return hr.RecentHistory(ctx, limit)
}

// ServerTime forwards to the underlying store when it has a server clock
// (store.ServerClock); one without fails with store.ErrNoServerClock, so
// that a caller stops asking. Until the store opens it fails as every call
// does.
func (s *Store) ServerTime(ctx context.Context) (time.Time, error) {
	st, err := s.get(ctx)
	if err != nil {
		return time.Time{}, err
	}
	sc, ok := st.(store.ServerClock)
	if !ok {
		return time.Time{}, fmt.Errorf("reconnect: %w", store.ErrNoServerClock)
	}
	return sc.ServerTime(ctx)
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.ServerClock = (*Store)(nil)
)
