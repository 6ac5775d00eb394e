package reconnect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// AttemptTimeout bounds one connection attempt. An attempt runs on its own
// context, not on the caller's that started it: a caller that gives up
// (a main-loop turn's bound, an HTTP client gone) neither cuts short the
// attempt every later caller will use nor leaves its own "context
// canceled" as the store's error. The opener's own bounds (15 s for an
// ArangoDB dial) are normally the shorter.
const AttemptTimeout = 30 * time.Second

// FirstJoinWait: a caller that finds the very first attempt under way
// waits for it at most until this long after it began (and no longer than
// its own context allows), so that a process's concurrent first calls all
// get a store that opens at once (SQLite: milliseconds) instead of a
// spurious failure. Once an attempt has failed, a caller that finds
// another under way gets the last error at once: the store is known to be
// unreachable, and a dial may take seconds.
const FirstJoinWait = 500 * time.Millisecond

// errClosed: the store was closed before it could be opened.
var errClosed = errors.New("store closed before it was opened")

// attempt is one connection attempt. err and st are written before done
// is closed and read only after.
type attempt struct {
	done   chan struct{}
	began  time.Time // real time: join's timer
	cancel context.CancelFunc
	err    error
}

// get returns the open store or a fault error (store.IsFault), without
// ever waiting on a dial it did not start for longer than FirstJoinWait:
//
//   - the store is open: it, at once;
//   - an attempt failed less than minRetry ago (counted from its end): its
//     error, at once;
//   - an attempt is under way: its predecessor's error at once, or, for the
//     first attempt, its result if it comes within FirstJoinWait of its start;
//   - else this caller starts an attempt and waits for it as long as its
//     own context allows (the attempt goes on without it).
func (s *Store) get(ctx context.Context) (store.Store, error) {
	s.mu.Lock()
	if st := s.st; st != nil {
		s.mu.Unlock()
		return st, nil
	}
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("store unavailable: %w", errClosed)
	}
	if a := s.inFlight; a != nil {
		last := s.lastErr
		s.mu.Unlock()
		if last != nil {
			return nil, fmt.Errorf("store unavailable: not reachable yet (connecting again): %w", last)
		}
		return s.join(ctx, a, a.began.Add(FirstJoinWait))
	}
	if s.lastErr != nil && s.now().Sub(s.lastEnd) < s.minRetry {
		last := s.lastErr
		s.mu.Unlock()
		return nil, fmt.Errorf("store unavailable: not reachable yet: %w", last)
	}
	if err := ctx.Err(); err != nil { // no attempt for a caller that cannot wait for it
		s.mu.Unlock()
		return nil, fmt.Errorf("store unavailable: not opened: %w", err)
	}
	a := s.start(ctx)
	s.mu.Unlock()
	return s.join(ctx, a, time.Time{})
}

// start begins an attempt on a context of its own (AttemptTimeout; ctx's
// values, not its cancellation). Called with mu held.
func (s *Store) start(ctx context.Context) *attempt {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AttemptTimeout)
	a := &attempt{done: make(chan struct{}), began: time.Now(), cancel: cancel}
	s.inFlight = a
	go s.run(actx, a)
	return a
}

// run makes attempt a and records its outcome: the store, or the error and
// when it came (the retry gap counts from the end of a failed attempt).
func (s *Store) run(ctx context.Context, a *attempt) {
	defer a.cancel()
	st, err := s.open(ctx)
	if err == nil && st == nil {
		err = errors.New("the opener returned no store and no error")
	}
	var late io.Closer // opened after Close: closed here, never used
	s.mu.Lock()
	s.inFlight = nil
	switch {
	case err != nil:
		s.lastErr, s.lastEnd = err, s.now()
		a.err = err
	case s.closed:
		late, _ = st.(io.Closer)
		a.err = errClosed
	default:
		s.st, s.lastErr = st, nil
	}
	s.mu.Unlock()
	close(a.done)
	if late != nil {
		_ = late.Close() // nothing to report it to: its Close already returned
	}
}

// join waits for attempt a until it ends, ctx ends, or until (when not
// zero), whichever comes first.
func (s *Store) join(ctx context.Context, a *attempt, until time.Time) (store.Store, error) {
	select {
	case <-a.done: // ended already: its outcome, whatever ctx and until say
		return s.outcome(a)
	default:
	}
	var expired <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("store unavailable: not reachable yet (connecting): %w", ctx.Err())
	case <-expired:
		return nil, errors.New("store unavailable: not reachable yet (connecting)")
	}
	return s.outcome(a)
}

// outcome is what attempt a, ended, gives its callers.
func (s *Store) outcome(a *attempt) (store.Store, error) {
	if a.err != nil {
		return nil, fmt.Errorf("store unavailable: %w", a.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, nil
}
