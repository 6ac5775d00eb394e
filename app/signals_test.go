package app

import (
	"sync"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM to this process followed at once by another (GNU timeout's to
// the process, then to its group) is one request: the stop stays
// graceful. A signal after stop.Window is a second request, which forces
// the stop.
func TestSignalsTogetherAreOneStopRequest(t *testing.T) {
	var mu sync.Mutex
	var agains []int
	ctx, first, release := stopSignals(func(n int) {
		mu.Lock()
		defer mu.Unlock()
		agains = append(agains, n)
	})
	defer release()
	seen := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), agains...)
	}
	kill := func() {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	kill()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no stop after SIGTERM")
	}
	kill() // the group's copy, well within the window
	time.Sleep(100 * time.Millisecond)
	if first() != syscall.SIGTERM || len(seen()) != 0 {
		t.Fatalf("two SIGTERMs together: first %v, later requests %v; want SIGTERM and none", first(), seen())
	}
	time.Sleep(500 * time.Millisecond)
	kill() // a separate signal
	for end := time.Now().Add(5 * time.Second); len(seen()) == 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := seen(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("a later SIGTERM: requests %v, want [2] (forced)", got)
	}
}
