// Package service supervises the background services of a run: the main
// loop, the HTTP API, the clock watch, the model-set recorder, the GPU
// probe, the progress log and the rescans. They are started, stopped and
// their failures handled here, in one place, as the core supervises its
// workers: a service that fails is logged and restarted after a backoff,
// unless it is essential, whose end (failed or not) ends its group.
//
// Invariants: every service of a group runs on its own goroutine, under
// the group's context; a panic in a service is recovered and handled as
// its failure; Stop cancels the group's context and returns only once
// every service of the group has returned.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/restart"
)

// Service is one background service: Run works until ctx ends, and
// returns nil then, or earlier when its work is done (a rescan loop with
// no rescan interval). An error before ctx ends is a failure.
type Service struct {
	Name string
	Run  func(ctx context.Context) error
	// Essential: the service's end ends its group (the others are
	// cancelled), and its error is the group's; it is never restarted.
	Essential bool
}

// Supervisor starts groups of services. Its zero value logs nowhere and
// backs off by DefaultBackoff.
type Supervisor struct {
	Log *slog.Logger
	// Backoff is the wait before the nth restart (n >= 1) of a service
	// that failed n times in a row; nil: DefaultBackoff.
	Backoff func(n int) time.Duration
}

// Backoff bounds: the first restart waits MinBackoff, each next one twice
// the last, up to MaxBackoff. A service that ran at least MaxBackoff
// before it failed starts again from MinBackoff.
const (
	MinBackoff = time.Second
	MaxBackoff = time.Minute
)

// DefaultBackoff is the core's restart backoff (restart.Config.Backoff)
// with MinBackoff and MaxBackoff: MinBackoff doubled n-1 times, at most
// MaxBackoff.
func DefaultBackoff(n int) time.Duration {
	return restart.Config{BackoffBase: MinBackoff, BackoffMax: MaxBackoff}.Backoff(n - 1)
}

// Group is the services one Start started.
type Group struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ended  chan struct{} // closed once an essential service has ended
	once   sync.Once
	mu     sync.Mutex
	err    error // the first essential service's error
}

// Start runs each service on its own goroutine under a context derived
// from ctx, and returns at once.
func (s *Supervisor) Start(ctx context.Context, services ...Service) *Group {
	ctx, cancel := context.WithCancel(ctx)
	g := &Group{cancel: cancel, ended: make(chan struct{})}
	for _, svc := range services {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			s.supervise(ctx, g, svc)
		}()
	}
	return g
}

// Ended is closed once an essential service of the group has ended (and
// the others are being cancelled).
func (g *Group) Ended() <-chan struct{} { return g.ended }

// Stop cancels the group's services and waits for every one of them. It
// returns the error of the first essential service that ended with one
// (an error that is only the group's cancellation excepted).
func (g *Group) Stop() error {
	g.cancel()
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// end records an essential service's end and cancels the group.
func (g *Group) end(ctx context.Context, err error) {
	if err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
		g.mu.Lock()
		if g.err == nil {
			g.err = err
		}
		g.mu.Unlock()
	}
	g.once.Do(func() { close(g.ended) })
	g.cancel()
}

// supervise runs svc until ctx ends, restarting it after each failure
// unless it is essential.
func (s *Supervisor) supervise(ctx context.Context, g *Group, svc Service) {
	failures := 0
	for {
		began := time.Now()
		err := s.runGuarded(ctx, svc)
		if svc.Essential {
			g.end(ctx, err)
			return
		}
		if err == nil || ctx.Err() != nil {
			return
		}
		if time.Since(began) >= MaxBackoff {
			failures = 0
		}
		failures++
		wait := s.backoff(failures)
		s.log().Error("service failed; restarting", "service", svc.Name, "in", wait, "failures", failures, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runGuarded runs svc once; a panic is logged and returned as an error.
func (s *Supervisor) runGuarded(ctx context.Context, svc Service) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log().Error("service panicked", "service", svc.Name, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("service %s panicked: %v", svc.Name, r)
		}
	}()
	return svc.Run(ctx)
}

func (s *Supervisor) backoff(n int) time.Duration {
	if s.Backoff != nil {
		return s.Backoff(n)
	}
	return DefaultBackoff(n)
}

func (s *Supervisor) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}
