package driver

import (
	"context"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/storehealth"
)

// StoreWaitLogEvery is how often, at most, Run reports a stop that waits on
// the store alone: once when the wait begins, then at most this often.
const StoreWaitLogEvery = 30 * time.Second

// ForcedStoreBudget bounds the store calls of a stop after ForceStop: the
// killed workers' one release try each, all together.
const ForcedStoreBudget = time.Second

// ForceStop carries out a second stop signal: the node kills its workers
// at once and gives up the store writes its stop waits for (claim
// releases, restart states, the node name's hand-back: node.ForceStop);
// Run then returns as soon as the workers are reaped, and Abandoned says
// what was given up. Before any stop it is a stop too.
//
// It runs on the loop goroutine, which may be inside store calls: a tick
// of a stop waiting on the store makes several, each waiting out SQLite's
// busy timeout (5 s) while another process holds the write lock. So the
// context of the loop's store calls is cancelled first: both store
// adapters give up a wait when it is (the calls fail as store errors, and
// what they were retrying is then given up). The calls after the force
// share one context that ends ForcedStoreBudget later: a worker it kills
// still tries its release once, but however many workers there are, the
// store holds the rest of the stop up for that long at most. A store call
// that does not heed its context holds the force up to its own timeout.
// Only the first call does anything; ForceStop fails once the loop has
// ended.
func (m *Main) ForceStop(ctx context.Context) error {
	if !m.forcing.CompareAndSwap(false, true) {
		return nil
	}
	m.calls.interrupt()
	err := m.Do(ctx, func(_ context.Context, now time.Time) {
		m.calls.resumeFor(ForcedStoreBudget)
		m.Node.ForceStop(now)
	})
	if err != nil {
		m.calls.resume()
	}
	return err
}

// Abandoned returns what a forced stop gave up; call it once Run returned.
func (m *Main) Abandoned() node.Abandoned { return m.Node.Abandoned() }

// noteStoreWait reports a stop that waits on the store alone when the wait
// begins and then every StoreWaitLogEvery, through OnStoreWait (by default
// a WARN line); on the loop goroutine.
func (m *Main) noteStoreWait(now time.Time) {
	w, ok := m.Node.WaitingOnStore()
	if !ok {
		m.waitSince = time.Time{}
		return
	}
	if m.waitSince.IsZero() {
		m.waitSince, m.waitLogged = now, time.Time{}
	}
	if !m.waitLogged.IsZero() && now.Sub(m.waitLogged) < StoreWaitLogEvery {
		return
	}
	m.waitLogged = now
	if m.OnStoreWait != nil {
		m.OnStoreWait(w, now.Sub(m.waitSince))
		return
	}
	m.Log.Warn("stopping: waiting for the store to take the claim releases and restart states the stop owes",
		"claim_releases", len(w.Releases), "restart_states", len(w.RestartStates), "waited", now.Sub(m.waitSince).Round(time.Second))
}

// storeCalls hands out the context of the main loop's store calls. It
// does not end with the run's context (a graceful stop still writes); interrupt
// cancels it, from any goroutine, so that the calls under way and those
// made until resume fail at once.
type storeCalls struct {
	base   context.Context
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

func newStoreCalls(base context.Context) *storeCalls {
	s := &storeCalls{base: base}
	s.ctx, s.cancel = context.WithCancel(base)
	return s
}

// current is the context for the next store calls.
func (s *storeCalls) current() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// interrupt cancels the store calls under way and those to come, until resume.
func (s *storeCalls) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel()
}

// resume gives the store calls to come a fresh context, if it was interrupted.
func (s *storeCalls) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		s.ctx, s.cancel = context.WithCancel(s.base)
	}
}

// resumeFor gives the store calls to come one fresh context that ends d
// from now; a call cut short by that end is a store fault (storehealth.ErrTooSlow).
func (s *storeCalls) resumeFor(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel()
	s.ctx, s.cancel = context.WithTimeoutCause(s.base, d, storehealth.ErrTooSlow)
}
