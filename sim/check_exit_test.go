package sim

import (
	"testing"

	"github.com/nomarr/nomarr/core/event"
)

// A worker exits 0 only when its main process stops or is dead; a main
// process spawns nothing once it stops. The events are fed by hand.
func TestCheckerCleanExitsAndSpawnsAfterStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed []event.Event
		want string
	}{
		{"exit 0 with the main process alive", []event.Event{
			{Event: event.WorkerExit, Code: event.IntPtr(0), Reason: "main process gone"},
		}, "exited 0"},
		{"exit 0 on a stop", []event.Event{
			{Event: event.Stop},
			{Event: event.WorkerExit, Code: event.IntPtr(0), Reason: "stop requested"},
		}, ""},
		{"exit 0 after main death", []event.Event{
			{Event: event.MainDeath},
			{Event: event.WorkerExit, Code: event.IntPtr(0), Reason: "main process gone"},
		}, ""},
		{"exit 1 with the main process alive", []event.Event{
			{Event: event.WorkerExit, Code: event.IntPtr(1), Reason: "10 consecutive errors"},
		}, ""},
		{"spawn after a stop", []event.Event{
			{Event: event.Stop},
			{Event: event.Spawn, PID: 99},
		}, "spawned while stopping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := busyWorld(t, "clean-exits")
			in := w.Instances[0]
			for _, e := range tc.feed {
				e.Instance = in.ID
				if e.Event != event.Stop && e.Event != event.MainDeath {
					e.Component = "worker:discovery:0"
				}
				w.record(e)
			}
			wantViolation(t, w, tc.want)
		})
	}
}
