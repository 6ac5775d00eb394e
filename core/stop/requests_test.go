package stop

import (
	"testing"
	"time"
)

// Two signals within the window (timeout's SIGTERM to the child, then to
// its group) are one request: a graceful stop only. A signal after the
// window is the second request, which forces the stop; one after that is
// the third.
func TestSignalsWithinTheWindowAreOneRequest(t *testing.T) {
	var r Requests
	ms := time.Millisecond
	for _, c := range []struct {
		at   time.Duration
		want Request
	}{
		{3 * ms, Request{N: 1}},
		{3*ms + 40*time.Microsecond, Request{N: 1, Same: true}}, // the group's copy
		{3 * ms, Request{N: 1, Same: true}},                     // the same instant
		{502 * ms, Request{N: 1, Same: true}},                   // still within 500 ms of the first
		{503 * ms, Request{N: 2}},                               // a separate signal: forced
		{600 * ms, Request{N: 2, Same: true}},
		{2 * time.Second, Request{N: 3}},
	} {
		if got := r.Signal(c.at); got != c.want {
			t.Fatalf("signal at %s = %+v, want %+v", c.at, got, c.want)
		}
	}
}

// The window runs from a request's first signal, not from its last copy:
// a stream of signals 100 ms apart still makes a new request every 500 ms.
func TestAStreamOfSignalsStillForces(t *testing.T) {
	var r Requests
	var forcedAt time.Duration
	for at := time.Duration(0); at <= time.Second; at += 100 * time.Millisecond {
		if q := r.Signal(at); q.N == 2 && !q.Same {
			forcedAt = at
			break
		}
	}
	if forcedAt != 500*time.Millisecond {
		t.Fatalf("a stream of signals forced at %s, want 500ms", forcedAt)
	}
}
