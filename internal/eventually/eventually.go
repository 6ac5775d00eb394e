// Package eventually is the one polling wait of the tests. A test waits on a
// signal (a channel, an event, a process exit) where the code under test
// gives one; it polls with True only for a state that nothing announces,
// such as a file another process writes or a view a loop refreshes.
package eventually

import (
	"testing"
	"time"
)

// Poll is the interval between two checks of a condition.
const Poll = 10 * time.Millisecond

// True checks cond every Poll until it holds, and fails t naming what it
// waited for once limit has passed. cond runs on the test's goroutine.
func True(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s in vain for %s", limit, what)
		}
		<-tick.C
	}
}
