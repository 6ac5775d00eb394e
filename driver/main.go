// Package driver runs the core for real. Main is the main process's event
// loop: it owns the node (supervisor + HealthMonitor), feeds it pipe bytes,
// exits and ticks from one goroutine, and carries out its actions through the
// process adapter and the store. RunWorker is the worker process's loop. Both
// only translate; the core decides.
package driver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/storehealth"
	"github.com/nomarr/nomarr/core/supervisor"
)

// Main drives one node. All node access happens on the Run goroutine; other
// goroutines go through Do.
type Main struct {
	Node    *node.Node
	Spawner *process.Spawner
	Store   store.Store
	Clock   clock.Clock
	Log     *slog.Logger
	// OnStoreWait, when set, is called on the loop goroutine when a stop
	// begins to wait on the store alone and then every StoreWaitLogEvery
	// (forcestop.go), with what it waits for and for how long; by default
	// Run logs a WARN line.
	OnStoreWait func(w supervisor.StoreWait, waited time.Duration)

	events chan process.Event
	cmds   chan func(context.Context, time.Time)
	done   chan struct{}
	once   sync.Once
	view   atomic.Pointer[View] // view.go

	calls      *storeCalls  // the loop's store-call context (forcestop.go)
	watch      *storeWatch  // the node's store calls (storewatch.go)
	counts     *countsCache // the library counts shown (counts.go)
	tally      *tally       // the node's events counted (tally.go)
	skew       skewWatch    // this host's clock against the store server's (clockskew.go)
	forcing    atomic.Bool  // ForceStop was called
	waitSince  time.Time    // a stop began to wait on the store alone; zero: not waiting
	waitLogged time.Time    // that wait was last reported
}

// NewMain wires a node to a spawner. command builds a worker's command line.
func NewMain(cfg node.Config, st store.Store, clk clock.Clock, log *slog.Logger, sink event.Sink,
	command func(component string, gen uint64) (string, []string), output interface{ Write([]byte) (int, error) }) (*Main, error) {
	if clk == nil {
		clk = clock.New()
	}
	if log == nil {
		log = slog.Default()
	}
	m := &Main{Store: st, Clock: clk, Log: log, events: make(chan process.Event, 4096),
		cmds: make(chan func(context.Context, time.Time)), done: make(chan struct{}),
		calls: newStoreCalls(context.Background()), counts: newCountsCache(), tally: newTally()}
	m.Spawner = &process.Spawner{Command: command, Output: output, Events: m.events, Log: log}
	m.watch = newStoreWatch(clk.Now)
	counted := event.SinkFunc(func(e event.Event) {
		m.tally.Emit(e)
		if sink != nil {
			sink.Emit(e)
		}
	})
	n, err := node.New(cfg, m.Spawner, m.watch.wrap(st), counted)
	if err != nil {
		return nil, err
	}
	m.tally.register(n.Sup.Components())
	m.Node = n
	return m, nil
}

// Tally is what the node's events counted so far (tally.go); safe from
// any goroutine.
func (m *Main) Tally() Tally { return m.tally.get() }

// StoreHealth is what the node's store calls said of the store so far
// (storewatch.go); safe from any goroutine.
func (m *Main) StoreHealth() storehealth.Health { return m.watch.health() }

// Do runs f on the loop goroutine and waits for it; it fails once the loop
// has ended.
func (m *Main) Do(ctx context.Context, f func(ctx context.Context, now time.Time)) error {
	ran := make(chan struct{})
	select {
	case m.cmds <- func(ctx context.Context, now time.Time) { f(ctx, now); close(ran) }:
	case <-m.done:
		return fmt.Errorf("driver: main loop has stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ran:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run takes the node name, starts the workers and drives the node until
// ctx ends; then it stops gracefully (SIGTERM, grace, SIGKILL), hands the
// name back, and returns once every worker is reaped. stop, when it fires,
// also begins the graceful stop. A node name held by another running main
// process (at start, or taken over later) stops it too, and Run returns why.
// ForceStop (a second signal) ends the stop without waiting for the store.
func (m *Main) Run(ctx context.Context, stop <-chan struct{}) error {
	defer m.once.Do(func() { close(m.done) })
	// The store calls use a context of their own, not ctx, so the graceful
	// stop can still write; only ForceStop cuts them short.
	// The time the process does not run, wherever the loop is then
	// (stall.go), is reported to the node before each turn looks at its
	// workers (Node.Woke); from before the start, whose store calls may
	// wait too.
	stalls := newStallClock(m.Node.GraceAfter()/2, m.Clock.Now())
	stallCtx, stopStalls := context.WithCancel(context.Background())
	defer stopStalls()
	go stalls.run(stallCtx, m.Clock)
	m.Node.Start(m.calls.current(), m.Clock.Now())
	timer := m.Clock.Timer(time.Hour)
	defer timer.Stop()
	cancelled := ctx.Done()
	for {
		now := m.Clock.Now()
		m.publish(now)
		if err := m.Node.Halted(); err != nil && !m.Node.Sup.Stopping() {
			m.Log.Error("stopping", "err", err)
			m.Node.Stop(now)
		}
		if m.Node.Sup.Stopping() && m.Node.Sup.Done() {
			break
		}
		m.noteStoreWait(now)
		wait := m.Node.NextWake().Sub(now)
		if wait < 0 {
			wait = 0
		}
		timer.Reset(wait)
		var (
			ev   process.Event
			cmd  func(context.Context, time.Time)
			turn loopTurn
		)
		select {
		case ev = <-m.events:
			turn = turnEvent
		case <-timer.C:
			turn = turnTick
		case cmd = <-m.cmds:
			turn = turnCommand
		case <-cancelled:
			cancelled = nil
			if !m.Node.Sup.Stopping() {
				m.Log.Info("stopping: workers finish their current job, then exit")
				m.Node.Stop(m.Clock.Now())
			}
		case <-stop:
			stop = nil
			m.Node.Stop(m.Clock.Now())
		}
		if turn == turnNone {
			continue
		}
		// The turn's store calls are bounded from now, after any stall
		// is discounted: a bound set before the wait may have passed
		// during a stop.
		m.noteStall(stalls, m.Clock.Now())
		sctx, cancel := m.storeContext(m.Clock.Now())
		switch turn {
		case turnEvent:
			m.handle(sctx, ev)
		case turnTick:
			m.drain(sctx)
			// One instant for the stall report and the tick: a stop
			// after it is reported at the next turn, and this tick
			// judges nothing by the time it lost.
			now := m.Clock.Now()
			if m.noteStall(stalls, now) { // stopped while draining
				cancel()
				sctx, cancel = m.storeContext(now)
			}
			m.noteStoreWait(now) // an exit just drained may begin the wait: before a tick's store calls
			m.Node.Tick(sctx, now)
		case turnCommand:
			cmd(sctx, m.Clock.Now())
		}
		cancel()
	}
	m.once.Do(func() { close(m.done) })
	if err := m.Node.ReleaseName(m.calls.current(), m.Clock.Now()); err != nil {
		m.Log.Warn("node name not handed back: the next start waits for its hold to lapse", "err", err)
	}
	// Every child is reaped; drain what the readers still send.
	drained := make(chan struct{})
	go func() {
		for range m.events {
		}
		close(drained)
	}()
	m.Spawner.Wait()
	close(m.events)
	<-drained
	return m.Node.Halted()
}

// loopTurn is what woke the loop: nothing to do with the store (a stop
// signal), a pipe event, the timer, or a command (Do).
type loopTurn uint8

const (
	turnNone loopTurn = iota
	turnEvent
	turnTick
	turnCommand
)

// noteStall reports the stalls of the process seen until now, the time
// of the turn, to the node (Node.Woke), oldest first, and whether there
// was one.
func (m *Main) noteStall(s *stallClock, now time.Time) bool {
	st := s.take(now)
	for _, x := range st {
		m.Node.Woke(x.since, x.asked, x.at)
	}
	return len(st) > 0
}

// storeContext is the context of one loop turn's store calls: that of
// m.calls (ForceStop cuts it short), ending at the node's
// StoreCallDeadline, so that no store call holds up a kill. A call cut
// short by that bound is a store fault (storehealth.ErrTooSlow).
func (m *Main) storeContext(now time.Time) (context.Context, context.CancelFunc) {
	ctx := m.calls.current()
	d, ok := m.Node.StoreCallDeadline(now)
	if !ok {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d.Sub(now), storehealth.ErrTooSlow)
}

// drain handles the pipe events already waiting. A tick comes after them:
// when the loop was held up (a store call waiting out its timeout), the
// frames that arrived meanwhile must count before the node looks for
// workers that stopped framing.
func (m *Main) drain(ctx context.Context) {
	for n := len(m.events); n > 0; n-- {
		m.handle(ctx, <-m.events)
	}
}

func (m *Main) handle(ctx context.Context, ev process.Event) {
	now := m.Clock.Now()
	switch ev.Kind {
	case process.Data:
		m.Node.Sup.PipeData(ev.Component, ev.Gen, ev.Data, now)
	case process.EOF:
		m.Node.Sup.PipeClosed(ev.Component, ev.Gen, now)
	case process.Exited:
		if ev.Signal != "" {
			m.Log.Warn("worker ended by a signal", "component", ev.Component, "signal", ev.Signal)
			m.Node.Sup.Signaled(ctx, ev.Component, ev.Gen, ev.Signal, now)
			return
		}
		m.Node.Sup.Exited(ctx, ev.Component, ev.Gen, ev.Code, now)
	}
}

// ProbeGPU runs probe now and every interval until ctx ends, and records each
// result in the node's cached gpu:health (the workers' preflight reads it).
// The probe runs off the main loop; only the write goes through it.
func (m *Main) ProbeGPU(ctx context.Context, interval time.Duration, probe func(context.Context) (bool, string)) {
	t := m.Clock.Ticker(interval)
	defer t.Stop()
	for {
		ok, reason := probe(ctx)
		_ = m.Do(ctx, func(ctx context.Context, now time.Time) {
			if err := m.Node.GPUProbed(ctx, now, ok, reason); err != nil {
				m.Log.Warn("gpu health not recorded", "err", err)
			}
		})
		if !ok {
			m.Log.Warn("gpu unavailable", "reason", reason)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.done:
			return
		case <-t.C:
		}
	}
}
