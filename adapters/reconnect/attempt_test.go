package reconnect

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/store"
)

// fakeClock is a settable clock safe to read from the attempt goroutines.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// blockingOpener holds every attempt until release gets a value (the
// attempt's outcome: nil for a memstore) or the attempt's context ends,
// and counts attempts, those running at once included.
type blockingOpener struct {
	entered chan context.Context // the attempt's context, when it starts
	release chan error
	opens   atomic.Int32
	running atomic.Int32
	most    atomic.Int32
}

func newBlockingOpener() *blockingOpener {
	return &blockingOpener{entered: make(chan context.Context, 16), release: make(chan error)}
}

func (o *blockingOpener) open(ctx context.Context) (store.Store, error) {
	o.opens.Add(1)
	n := o.running.Add(1)
	defer o.running.Add(-1)
	for m := o.most.Load(); n > m && !o.most.CompareAndSwap(m, n); m = o.most.Load() {
	}
	o.entered <- ctx
	select {
	case err := <-o.release:
		if err != nil {
			return nil, err
		}
		return memstore.New(1), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitEntered returns the context of the attempt that started, failing
// the test if none did.
func (o *blockingOpener) waitEntered(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-o.entered:
		return ctx
	case <-time.After(5 * time.Second):
		t.Fatal("no connection attempt started")
		return nil
	}
}

// finish ends the attempt under way with err (nil: a store), failing the
// test if none is waiting (one cut short by the caller that started it).
func (o *blockingOpener) finish(t *testing.T, err error) {
	t.Helper()
	select {
	case o.release <- err:
	case <-time.After(2 * time.Second):
		t.Fatal("no attempt under way to finish")
	}
}

// within runs f and fails the test if it has not returned after d (a call
// that waits on a dial it did not start).
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s still waiting after %s", what, d)
	}
	return nil
}

// A caller that finds an attempt under way waits for it no longer than
// its own context, nor past FirstJoinWait; once the store is known to be
// down, it gets the last error at once.
func TestCallersDoNotWaitForAnotherCallersAttempt(t *testing.T) {
	o := newBlockingOpener()
	clk := newFakeClock()
	s := New(o.open, 2*time.Second)
	s.now = clk.now

	first := make(chan error, 1)
	go func() { _, _, err := s.GetMeta(context.Background(), "x"); first <- err }()
	o.waitEntered(t)

	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := within(t, 2*time.Second, "a caller with a 20 ms context", func() error { _, _, err := s.GetMeta(short, "x"); return err })
	if !errors.Is(err, context.DeadlineExceeded) || !store.IsFault(err) || !strings.Contains(err.Error(), "not reachable yet") {
		t.Fatalf("short caller during the first attempt = %v", err)
	}
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Errorf("short caller returned after %s", d)
	}
	err = within(t, FirstJoinWait+2*time.Second, "a caller without a deadline", func() error { _, _, err := s.GetMeta(context.Background(), "x"); return err })
	if err == nil || !strings.Contains(err.Error(), "not reachable yet (connecting)") {
		t.Fatalf("caller past FirstJoinWait of the first attempt = %v", err)
	}

	down := errors.New("dial tcp: i/o timeout")
	o.finish(t, down)
	if err := <-first; !errors.Is(err, down) {
		t.Fatalf("the caller that started the attempt got %v, want its error", err)
	}
	clk.add(2 * time.Second)
	go func() { _, _, _ = s.GetMeta(context.Background(), "x") }() // the next attempt
	o.waitEntered(t)
	start = time.Now()
	err = within(t, 2*time.Second, "a caller during a retry", func() error { _, _, err := s.GetMeta(context.Background(), "x"); return err })
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "not reachable yet") {
		t.Fatalf("caller during a retry = %v, want the last error", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("caller during a retry returned after %s, want at once", d)
	}
	o.finish(t, nil)
}

// However many callers come while an attempt is under way, and however
// long it takes, one attempt runs: the callers do not queue for their own.
func TestOneAttemptAtATime(t *testing.T) {
	o := newBlockingOpener()
	clk := newFakeClock()
	s := New(o.open, 2*time.Second)
	s.now = clk.now
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, _ = s.Counts(ctx)
		})
	}
	o.waitEntered(t)
	within(t, 2*time.Second, "callers with 50 ms contexts", func() error { wg.Wait(); return nil })
	clk.add(5 * time.Second) // an attempt longer than the gap
	o.finish(t, errors.New("dial tcp: i/o timeout"))
	for range 8 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, _ = s.Counts(ctx)
		cancel()
	}
	if n, m := o.opens.Load(), o.most.Load(); n != 1 || m != 1 {
		t.Fatalf("%d attempts, %d at once; want 1, 1", n, m)
	}
}

// The retry gap counts from the end of the failed attempt: an attempt that
// took longer than the gap is not followed by another at once.
func TestRetryGapCountsFromTheAttemptsEnd(t *testing.T) {
	clk := newFakeClock()
	down := errors.New("connection refused")
	var opens atomic.Int32
	s := New(func(context.Context) (store.Store, error) {
		opens.Add(1)
		clk.add(5 * time.Second) // a slow dial
		return nil, down
	}, 2*time.Second)
	s.now = clk.now
	ctx := context.Background()
	if _, err := s.Counts(ctx); !errors.Is(err, down) {
		t.Fatalf("first call = %v", err)
	}
	clk.add(time.Second)
	if _, err := s.Counts(ctx); !errors.Is(err, down) || !strings.Contains(err.Error(), "not reachable yet") {
		t.Fatalf("call 1 s after the failed attempt ended = %v", err)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("%d attempts 1 s after a 5 s attempt failed, want 1 (the gap counts from its end)", n)
	}
	clk.add(time.Second)
	_, _ = s.Counts(ctx)
	if n := opens.Load(); n != 2 {
		t.Fatalf("%d attempts once the gap passed, want 2", n)
	}
}

// A caller that gives up does not cut the attempt short: the attempt runs
// on its own bounded context, and what the next caller sees is the
// attempt's outcome, not the first caller's "context canceled".
func TestGivingUpCallerDoesNotPoisonTheAttempt(t *testing.T) {
	o := newBlockingOpener()
	s := New(o.open, 2*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, _, err := s.GetMeta(ctx, "x"); first <- err }()
	actx := o.waitEntered(t)
	if _, ok := actx.Deadline(); !ok {
		t.Error("the attempt's context has no deadline")
	}
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up got %v", err)
	}
	if actx.Err() != nil {
		t.Fatalf("the attempt was cut short by its first caller: %v", actx.Err())
	}
	o.finish(t, nil)
	err := within(t, 2*time.Second, "the next caller", func() error { _, _, err := s.GetMeta(context.Background(), "x"); return err })
	if err != nil {
		t.Fatalf("next caller after the first gave up = %v, want the opened store", err)
	}
}

// closeCounter is a store that counts its Close calls.
type closeCounter struct {
	*memstore.Store
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// Close cuts short an attempt under way; a store it still opens is closed,
// not used.
func TestCloseDuringAnAttempt(t *testing.T) {
	late := &closeCounter{Store: memstore.New(1)}
	entered, release := make(chan context.Context, 1), make(chan struct{})
	s := New(func(ctx context.Context) (store.Store, error) {
		entered <- ctx
		<-release // an opener that finishes its dial regardless
		return late, nil
	}, 2*time.Second)
	first := make(chan error, 1)
	go func() { _, err := s.Counts(context.Background()); first <- err }()
	actx := <-entered
	if err := within(t, 2*time.Second, "Close during an attempt", s.Close); err != nil {
		t.Fatal(err)
	}
	if actx.Err() == nil {
		t.Error("Close did not cancel the attempt under way")
	}
	close(release)
	if err := <-first; !errors.Is(err, errClosed) {
		t.Fatalf("caller of an attempt that outlived Close = %v", err)
	}
	if n := late.closed.Load(); n != 1 {
		t.Fatalf("the store opened after Close was closed %d times, want 1", n)
	}
	if _, err := s.Counts(context.Background()); !errors.Is(err, errClosed) {
		t.Fatalf("call after Close = %v", err)
	}
}
