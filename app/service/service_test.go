package service

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/syncbuf"
)

// quick restarts at once: the tests wait on signals, not on backoffs.
func quick(log *syncbuf.Buffer) *Supervisor {
	return &Supervisor{Log: slog.New(slog.NewTextHandler(log, nil)), Backoff: func(int) time.Duration { return time.Millisecond }}
}

func TestFailedServiceIsRestarted(t *testing.T) {
	var log syncbuf.Buffer
	var runs atomic.Int32
	third := make(chan struct{})
	g := quick(&log).Start(context.Background(), Service{Name: "flaky", Run: func(ctx context.Context) error {
		if runs.Add(1) < 3 {
			return errors.New("boom")
		}
		close(third)
		<-ctx.Done()
		return nil
	}})
	<-third
	if err := g.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if n := strings.Count(log.String(), "service failed; restarting"); n != 2 {
		t.Fatalf("logged %d restarts, want 2:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "service=flaky") || !strings.Contains(log.String(), "err=boom") {
		t.Fatalf("the restart line names neither the service nor its error:\n%s", log.String())
	}
}

func TestStopWaitsForEveryService(t *testing.T) {
	var returned atomic.Int32
	started := make(chan struct{}, 3)
	var services []Service
	for range 3 {
		services = append(services, Service{Name: "slow", Run: func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond) // a service that takes a while to wind down
			returned.Add(1)
			return nil
		}})
	}
	g := (&Supervisor{}).Start(context.Background(), services...)
	for range 3 {
		<-started
	}
	if err := g.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if n := returned.Load(); n != 3 {
		t.Fatalf("Stop returned with %d of 3 services returned", n)
	}
}

func TestPanicIsContainedAndLogged(t *testing.T) {
	var log syncbuf.Buffer
	var runs atomic.Int32
	again := make(chan struct{})
	g := quick(&log).Start(context.Background(), Service{Name: "crashy", Run: func(ctx context.Context) error {
		if runs.Add(1) == 1 {
			panic("bad state")
		}
		close(again)
		<-ctx.Done()
		return nil
	}})
	<-again
	if err := g.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	out := log.String()
	if !strings.Contains(out, "service panicked") || !strings.Contains(out, "panic=\"bad state\"") {
		t.Fatalf("the panic was not logged:\n%s", out)
	}
	if !strings.Contains(out, "service failed; restarting") {
		t.Fatalf("the panicking service was not restarted:\n%s", out)
	}
}

func TestEssentialServiceEndsItsGroup(t *testing.T) {
	var log syncbuf.Buffer
	otherStopped := make(chan struct{})
	g := quick(&log).Start(context.Background(),
		Service{Name: "main", Essential: true, Run: func(ctx context.Context) error { return errors.New("store gone") }},
		Service{Name: "other", Run: func(ctx context.Context) error {
			<-ctx.Done()
			close(otherStopped)
			return nil
		}})
	<-g.Ended()
	<-otherStopped
	if err := g.Stop(); err == nil || err.Error() != "store gone" {
		t.Fatalf("Stop = %v, want the essential service's error", err)
	}
	if strings.Contains(log.String(), "restarting") {
		t.Fatalf("an essential service was restarted:\n%s", log.String())
	}
}

func TestEssentialPanicEndsItsGroupWithAnError(t *testing.T) {
	var log syncbuf.Buffer
	g := quick(&log).Start(context.Background(),
		Service{Name: "main", Essential: true, Run: func(ctx context.Context) error { panic("nil map") }})
	<-g.Ended()
	if err := g.Stop(); err == nil || !strings.Contains(err.Error(), "service main panicked: nil map") {
		t.Fatalf("Stop = %v, want the panic as an error", err)
	}
}

func TestCancellationIsNoEssentialError(t *testing.T) {
	g := (&Supervisor{}).Start(context.Background(),
		Service{Name: "http", Essential: true, Run: func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}})
	if err := g.Stop(); err != nil {
		t.Fatalf("Stop = %v, want nil: the service ended because it was stopped", err)
	}
	select {
	case <-g.Ended():
	default:
		t.Fatal("Ended not closed after the essential service returned")
	}
}

func TestServiceDoneIsNotRestarted(t *testing.T) {
	var runs atomic.Int32
	first, second := make(chan struct{}), make(chan struct{})
	g := quick(&syncbuf.Buffer{}).Start(context.Background(), Service{Name: "once", Run: func(ctx context.Context) error {
		switch runs.Add(1) {
		case 1:
			close(first)
		case 2:
			close(second)
		}
		return nil
	}})
	<-first
	select {
	case <-second:
		t.Fatal("a service that returned nil before its context ended was run again")
	case <-time.After(50 * time.Millisecond): // what a restart would take, many times over
	}
	if err := g.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestDefaultBackoffDoublesUpToItsBound(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		if got := DefaultBackoff(i + 1); got != w {
			t.Fatalf("DefaultBackoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}
