package driver

// The main loop's own duties, seen from outside: Do and its contexts, the
// stop channel, a refused node name, the name's hand-back, the bound on a
// turn's store calls, and how it reports a worker's pipe and death.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// events collects what the node emits (on the loop goroutine), and
// announces each event.
type events struct {
	changes
	mu  sync.Mutex
	got []event.Event
}

func (e *events) Emit(ev event.Event) {
	e.mu.Lock()
	e.got = append(e.got, ev)
	e.mu.Unlock()
	e.changed()
}

// wait waits until an event of kind for which match holds was emitted and
// returns it.
func (e *events) wait(t *testing.T, kind string, match func(event.Event) bool, within time.Duration) event.Event {
	t.Helper()
	var found event.Event
	e.until(t, within, "a "+kind+" event", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, ev := range e.got {
			if ev.Event == kind && (match == nil || match(ev)) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// loop is one Main running over st, with its run's end and result.
type loop struct {
	m      *Main
	sink   *events
	cancel context.CancelFunc
	ran    chan error
}

// runLoop starts a Main whose workers run sh -c script, over st, with cfg
// changed by mod; stop is Run's stop channel.
func runLoop(t *testing.T, st store.Store, script string, stop <-chan struct{}, mod func(*node.Config)) *loop {
	t.Helper()
	cfg := node.DefaultConfig("i:1:1", "n", 1)
	cfg.Monitor.CheckInterval = 50 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	sink := &events{}
	m, err := NewMain(cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), sink,
		func(string, uint64) (string, []string) { return "sh", []string{"-c", script} }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{m: m, sink: sink, cancel: cancel, ran: make(chan error, 1)}
	go func() { l.ran <- m.Run(ctx, stop) }()
	return l
}

// end waits for Run to return, within d, and returns its error.
func (l *loop) end(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-l.ran:
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return in %s", d)
		return nil
	}
}

// Do fails at once once the loop has ended (no one will run f), and so
// does ForceStop.
func TestDoFailsOnceTheLoopEnded(t *testing.T) {
	l := runLoop(t, memstore.New(1), "exec sleep 60", nil, nil)
	waitAllRunning(t, l.m, 1)
	l.cancel()
	if err := l.end(t, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	ran := false
	err := l.m.Do(ctx, func(context.Context, time.Time) { ran = true })
	if err == nil || ran || errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("Do after the loop ended = %v after %s (ran %v); want its error at once", err, time.Since(start), ran)
	}
	if err := l.m.ForceStop(ctx); err == nil {
		t.Fatal("ForceStop after the loop ended succeeded")
	}
}

// Do gives up with its caller's context even while f runs: an API request
// whose client went away does not wait for the loop.
func TestDoGivesUpWithItsContext(t *testing.T) {
	l := runLoop(t, memstore.New(1), "exec sleep 60", nil, nil)
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	waitAllRunning(t, l.m, 1)
	release := make(chan struct{})
	held := time.AfterFunc(3*time.Second, func() { close(release) }) // f ends by then
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := l.m.Do(ctx, func(context.Context, time.Time) { <-release })
	took := time.Since(start)
	if held.Stop() {
		close(release)
	}
	if !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("Do while f runs past the caller's deadline = %v after %s; want the deadline's error", err, took)
	}
}

// A node name held by a main process that runs (here: known alive) halts
// the node before it spawns anything: Run stops and returns why.
func TestRunReturnsWhyTheNameWasRefused(t *testing.T) {
	st := memstore.New(1)
	held := fmt.Sprintf(`{"instance":"n:other:1","pid":1,"until_ms":%d}`, time.Now().Add(time.Hour).UnixMilli())
	if err := st.SetMeta(context.Background(), node.NameKeyPrefix+"n", held); err != nil {
		t.Fatal(err)
	}
	l := runLoop(t, st, "exec sleep 60", nil, func(c *node.Config) {
		c.Liveness = func(node.NameHolder) node.Liveness { return node.Alive }
	})
	err := l.end(t, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Run with the name held by a running main process = %v, want why it was refused", err)
	}
	if _, ok := l.m.Spawner.PID("worker:discovery:0"); ok {
		t.Error("a worker was spawned under a refused node name")
	}
}

// The stop channel stops gracefully, as the end of Run's context does:
// SIGTERM to the workers, then, once every one is reaped and released,
// the node name handed back (the next start takes it at once).
func TestStopChannelStopsGracefully(t *testing.T) {
	st := memstore.New(1)
	stop := make(chan struct{})
	l := runLoop(t, st, "exec sleep 60", stop, nil)
	defer l.cancel()
	waitAllRunning(t, l.m, 1)
	close(stop)
	if err := l.end(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	l.sink.wait(t, event.Exit, func(e event.Event) bool { return e.Reason == "killed by SIGTERM" }, time.Second)
	raw, ok := st.MetaValue(node.NameKeyPrefix + "n")
	var h node.NameHolder
	if !ok || json.Unmarshal([]byte(raw), &h) != nil || h.Instance != "i:1:1" || h.UntilMs != 0 {
		t.Fatalf("node name after a graceful stop = %q, want it handed back (until_ms 0)", raw)
	}
}

// A stop signal is taken once: while the workers finish their jobs (here
// they ignore SIGTERM for the stop grace), the loop waits for its next
// wake; it does not spin on the signal.
func TestStopSignalTakenOnce(t *testing.T) {
	cpu := func() time.Duration { // this process's, all threads
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, how := range []string{"context", "stop channel"} {
		t.Run(how, func(t *testing.T) {
			stop := make(chan struct{})
			// The byte on the frame pipe (dropped: no frame) says SIGTERM is ignored.
			l := runLoop(t, memstore.New(1), `trap "" TERM; printf 'x\n' >&3; exec sleep 60`, stop, nil)
			l.sink.wait(t, event.FrameDropped, nil, 10*time.Second)
			if how == "context" {
				l.cancel()
			} else {
				close(stop)
			}
			l.sink.wait(t, event.Stop, nil, 10*time.Second) // the stop is under way
			before := cpu()
			// The CPU the loop takes over a real interval is what is measured.
			time.Sleep(500 * time.Millisecond)
			used := cpu() - before
			if err := l.m.ForceStop(context.Background()); err != nil {
				t.Fatal(err)
			}
			l.cancel()
			l.end(t, 20*time.Second)
			// A turn every check (50 ms) costs next to nothing (about 3 ms
			// in all); a loop spinning on the signal takes what CPU it gets
			// (66 ms or more of the 500 even at a load of 30 on 2 cores,
			// most of it on a quiet machine). The bound leaves room for a
			// garbage collection under -race on a loaded machine.
			if used > 60*time.Millisecond {
				t.Fatalf("%s of CPU in 500 ms of a stop waiting for its workers; want the loop idle between its checks", used)
			}
		})
	}
}

// hangingHistory holds every history write, once armed, until its
// context ends, as a store waiting on a lock that a stopped process holds.
type hangingHistory struct {
	*memstore.Store
	armed atomic.Bool
}

func (h *hangingHistory) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	if h.armed.Load() {
		<-ctx.Done()
		return fmt.Errorf("append history: %w", context.Cause(ctx))
	}
	return h.Store.AppendHistory(ctx, rows)
}

// A turn's store calls end by the next moment the node may have to kill a
// worker: a store call that does not answer does not hold a kill up, and
// the call cut short counts as a store fault.
func TestLoopStoreCallsEndByTheNextKill(t *testing.T) {
	st := &hangingHistory{Store: memstore.New(1)}
	l := runLoop(t, st, "exec sleep 60", nil, func(c *node.Config) {
		c.Monitor.HistoryInterval = 50 * time.Millisecond
		c.Supervisor.StartupTimeout = 2 * time.Second // it never frames
	})
	waitAllRunning(t, l.m, 1)
	st.armed.Store(true)
	l.sink.wait(t, event.Kill, nil, 10*time.Second)
	if h := l.m.StoreHealth(); h.Errors["append_history"] == 0 {
		t.Errorf("store errors %v: the history write cut short by the loop's bound not counted", h.Errors)
	}
	st.armed.Store(false)
	l.cancel()
	l.end(t, 20*time.Second)
}

// A worker ended by a signal it did not get from its owner is reported as
// such (its death's reason names the signal), not as an exit code.
func TestWorkerKilledBySignalNamed(t *testing.T) {
	l := runLoop(t, memstore.New(1), "kill -KILL $$", nil, nil)
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	l.sink.wait(t, event.Exit, func(e event.Event) bool { return e.Reason == "killed by SIGKILL" }, 10*time.Second)
}

// A worker that closes its frame pipe and lives on is dead to its owner:
// killed after pipe_close_grace, long before it would look hung.
func TestWorkerClosingItsPipeKilled(t *testing.T) {
	l := runLoop(t, memstore.New(1), "exec 3>&-; exec sleep 60", nil, nil)
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	l.sink.wait(t, event.Kill, nil, 10*time.Second)
}

// slowHistory holds every history write for hold once armed, whatever
// its context: a loop turn held up by a store call. sixHeld is closed
// once six writes were held.
type slowHistory struct {
	*memstore.Store
	hold    time.Duration
	armed   atomic.Bool
	held    atomic.Int32
	sixHeld chan struct{}
}

func (s *slowHistory) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	if s.armed.Load() {
		if s.held.Add(1) == 6 {
			close(s.sixHeld)
		}
		// The loop is held past hang_after on the real clock, which the
		// supervisor reads, while the worker goes on framing.
		time.Sleep(s.hold)
	}
	return s.Store.AppendHistory(ctx, rows)
}

// The frames that arrived while the loop was held up in a store call
// count before its next tick looks for hung workers: a worker that framed
// all along is not killed for the loop's own delay. (Without that order a
// tick taken before the waiting frames kills it about every other time:
// the loop picks among ready cases at random, so several delays are
// tried.)
func TestTickAfterTheFramesThatWaited(t *testing.T) {
	st := &slowHistory{Store: memstore.New(1), hold: 1200 * time.Millisecond, sixHeld: make(chan struct{})}
	frame := `HEALTH|{"component_id":"worker:discovery:0","status":"healthy","phase":"idle"}`
	l := runLoop(t, st, "while :; do printf '%s\\n' '"+frame+"' >&3; sleep 0.05; done", nil, func(c *node.Config) {
		c.Supervisor.StaleAfter, c.Supervisor.HangAfter = time.Second, time.Second
		c.Monitor.HistoryInterval = 50 * time.Millisecond
	})
	defer func() {
		st.armed.Store(false)
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	l.sink.wait(t, event.Status, func(e event.Event) bool { return e.To == "healthy" }, 10*time.Second)
	st.armed.Store(true)
	select {
	case <-st.sixHeld:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d held history writes in 30 s", st.held.Load())
	}
	st.armed.Store(false)
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	for _, e := range l.sink.got {
		if e.Event == event.Kill {
			t.Fatalf("a framing worker killed after the loop was held up: %+v", e)
		}
	}
}

// savesHeld holds every restart-state write, once armed, until its
// context ends.
type savesHeld struct {
	*memstore.Store
	armed   atomic.Bool
	entered chan struct{}
	once    sync.Once
}

func (s *savesHeld) SaveRestart(ctx context.Context, key string, st restart.State) error {
	if s.armed.Load() {
		s.once.Do(func() { close(s.entered) })
		<-ctx.Done()
		return fmt.Errorf("save restart: %w", ctx.Err())
	}
	return s.Store.SaveRestart(ctx, key, st)
}

// A command run on the loop (here an API reset) makes its store calls with
// the loop's context: ForceStop cuts a call that does not answer short,
// and the stop ends.
func TestForceStopCutsACommandsStoreCall(t *testing.T) {
	st := &savesHeld{Store: memstore.New(1), entered: make(chan struct{})}
	l := runLoop(t, st, "exec sleep 60", nil, nil)
	waitAllRunning(t, l.m, 1)
	st.armed.Store(true)
	reset := make(chan error, 1)
	go func() { reset <- (&API{Main: l.m}).Reset(context.Background(), "worker:discovery:0") }()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the reset never saved restart state")
	}
	go l.m.ForceStop(context.Background())
	l.end(t, 10*time.Second)
	<-reset
}
