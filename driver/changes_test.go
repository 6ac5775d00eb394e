package driver

import (
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/syncbuf"
)

// changes announces that a collector (of frames, events, log lines, store
// calls) got something new; a waiter checks its condition again at each
// announcement, so it waits on the collector, not on a clock. The zero
// value is ready to use.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

// changed wakes every waiter.
func (c *changes) changed() {
	c.mu.Lock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}

// next is closed at the next change.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// until waits until cond holds, checking it at start and after each
// change, and fails t naming what once within has passed.
func (c *changes) until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	limit := time.NewTimer(within)
	defer limit.Stop()
	for {
		ch := c.next() // taken before the check: a change during it is not lost
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			t.Fatalf("waited %s in vain for %s", within, what)
		}
	}
}

// watchedLog is a log sink that announces each line.
type watchedLog struct {
	syncbuf.Buffer
	changes
}

func (l *watchedLog) Write(p []byte) (int, error) {
	n, err := l.Buffer.Write(p)
	l.changed()
	return n, err
}
