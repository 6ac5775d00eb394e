// Package stop decides what a stop signal asks of a main process: a new
// request (the first stops gracefully, the second forces the stop) or the
// same request delivered twice. Requests is a pure state machine fed with
// monotonic times; nothing here reads a clock or touches a signal.
package stop

import "time"

// Window is how close to the request it belongs to a signal counts as the
// same request. GNU timeout sends SIGTERM to its child and then to the
// child's process group, so the child receives it twice within
// microseconds; a shell's kill to a process and its group, or a service
// manager's to the unit's processes, arrive as close. A person pressing
// Ctrl-C a second time does it a second or more after the first (reading
// the "stopping" line takes longer than 500 ms), and a script that means
// a second signal sends it after a pause of its own. 500 ms is far above
// the first and below the second.
const Window = 500 * time.Millisecond

// Requests counts the stop requests of one process from the signals it
// receives. The zero Requests has seen none. Not safe for concurrent use.
//
// Invariants:
//   - The first signal is request 1.
//   - A signal less than Window after the signal that made the current
//     request is that request again (Same): it is measured from the
//     request's first signal, not from the last duplicate, so a stream of
//     signals still makes a new request every Window.
//   - Any later signal is the next request (2, 3, …).
type Requests struct {
	n  int
	at time.Duration // the monotonic time of request n's first signal
}

// Request is what one signal asks.
type Request struct {
	// N is the rank of the request the signal belongs to: 1 for the
	// first, 2 for the second (it forces the stop), …
	N int
	// Same: the signal repeats request N (it came within Window of it)
	// and asks nothing new.
	Same bool
}

// Signal notes a signal received at at, a monotonic time (any fixed
// origin: the process's start, a time.Since of one instant), and says
// which request it is. Times must not decrease.
func (r *Requests) Signal(at time.Duration) Request {
	if r.n > 0 && at-r.at < Window {
		return Request{N: r.n, Same: true}
	}
	r.n++
	r.at = at
	return Request{N: r.n}
}
