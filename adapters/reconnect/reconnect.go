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

	"github.com/nomarr/nomarr/core/store"
)

// Opener opens the real store.
type Opener func(ctx context.Context) (store.Store, error)

// port is the store port, embedded unexported in Store.
type port = store.Store

// Store opens lazily. It is safe for concurrent use; how it opens is
// attempt.go's.
//
// Invariants: at most one connection attempt is in flight, and mu is never
// held during one, so no caller waits on the lock for a dial (see get for
// how long a caller waits at most); st, once set, is never replaced.
type Store struct {
	port // every call of the port, through around

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
	s := &Store{open: open, minRetry: minRetry, now: time.Now}
	s.port = store.Wrap(s.around)
	return s
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

// around makes one call of the port on the open store, or fails it as
// get does while there is none.
func (s *Store) around(ctx context.Context, _ store.Op, call store.Call) error {
	st, err := s.get(ctx)
	if err != nil {
		return err
	}
	return call(ctx, st)
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
