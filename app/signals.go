package app

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/core/stop"
)

// stopSignals returns a context that SIGINT or SIGTERM cancels, and a
// function that returns that first signal (nil before it). Every later
// request calls again with its rank (2 for the second, …), from another
// goroutine: a second Ctrl-C during the graceful stop forces it
// (forceOnSignal), not ignored. Signals that arrive together (GNU
// timeout's SIGTERM to the process and then to its group, a kill of the
// process and of its group) are one request, not two: what counts as a
// new request is decided in core/stop (stop.Requests, fed with the
// monotonic time each signal is received). again must not block. release
// stops listening.
func stopSignals(again func(n int)) (ctx context.Context, first func() os.Signal, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	done := make(chan struct{})
	start := time.Now() // time.Since reads the monotonic clock
	go func() {
		var requests stop.Requests
		for {
			select {
			case sig := <-ch:
				q := requests.Signal(time.Since(start))
				switch {
				case q.Same: // the same request delivered again: nothing new asked
				case got.CompareAndSwap(nil, sig):
					cancel()
				default:
					again(q.N)
				}
			case <-done:
				return
			}
		}
	}()
	first = func() os.Signal {
		sig, _ := got.Load().(os.Signal)
		return sig
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel()
		})
	}
	return ctx, first, release
}
