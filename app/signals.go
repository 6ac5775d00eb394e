package app

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// stopSignals returns a context that SIGINT or SIGTERM cancels, and a
// function that returns that first signal (nil before it). Every later
// one calls again with its rank (2 for the second, …), from another
// goroutine: a second Ctrl-C during the graceful stop forces it
// (forceOnSignal), not ignored. again must not block. release stops
// listening.
func stopSignals(again func(n int)) (ctx context.Context, first func() os.Signal, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case sig := <-ch:
				n++
				if got.CompareAndSwap(nil, sig) {
					cancel()
				} else {
					again(n)
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
