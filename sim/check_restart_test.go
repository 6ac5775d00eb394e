package sim

import (
	"testing"

	"github.com/nomarr/nomarr/core/event"
)

// A restart comes no earlier than its death plus its backoff, and consumes
// the one restart pending for its component; a manual reset of a component
// not running is a restart due at once. The owner's events are fed by hand.
func TestCheckerRestartTimers(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed func(w *World, ev func(kind string, mod func(*event.Event)))
		want string
	}{
		{"due", func(w *World, ev func(string, func(*event.Event))) {
			ev(event.Exit, nil)
			ev(event.RestartScheduled, func(e *event.Event) { e.BackoffMs = 1000 })
			w.now = w.now.Add(w.cfg.BackoffBase)
			ev(event.Restart, nil)
		}, ""},
		{"early", func(w *World, ev func(string, func(*event.Event))) {
			ev(event.Exit, nil)
			ev(event.RestartScheduled, func(e *event.Event) { e.BackoffMs = 1000 })
			ev(event.Restart, nil)
		}, "before its backoff ended"},
		{"twice", func(w *World, ev func(string, func(*event.Event))) {
			ev(event.Exit, nil)
			ev(event.RestartScheduled, func(e *event.Event) { e.BackoffMs = 1000 })
			w.now = w.now.Add(w.cfg.BackoffBase)
			ev(event.Restart, nil)
			ev(event.Restart, nil)
		}, "with no restart pending"},
		{"reset of a dead one", func(w *World, ev func(string, func(*event.Event))) {
			ev(event.Exit, nil)
			ev(event.Failed, nil)
			ev(event.Reset, nil)
			ev(event.Restart, nil)
		}, ""},
		{"reset of a live one", func(w *World, ev func(string, func(*event.Event))) {
			ev(event.Reset, nil)
			ev(event.Restart, nil)
		}, "with no restart pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := busyWorld(t, "restart-timers")
			in := w.Instances[0]
			ev := func(kind string, mod func(*event.Event)) {
				e := event.Event{Event: kind, Instance: in.ID, Component: "worker:discovery:0", Code: event.IntPtr(-1)}
				if mod != nil {
					mod(&e)
				}
				w.record(e)
			}
			tc.feed(w, ev)
			wantViolation(t, w, tc.want)
		})
	}
}
