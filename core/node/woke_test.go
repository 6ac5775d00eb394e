package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/node"
)

// Woke discounts a loop's lateness from LateAfter on (a quarter of
// hang_after, at least a check_interval), by exactly the lateness, and
// leaves shorter delays alone: they are the scheduler's own.
func TestWokeDiscountsOnlyALateLoop(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		hang      time.Duration
		late      time.Duration
		lateAfter time.Duration
		moved     time.Duration // how far the hang deadline moves
	}{
		{"defaults, 45 s stopped", 30 * time.Second, 45 * time.Second, 7500 * time.Millisecond, 45 * time.Second},
		{"defaults, at LateAfter", 30 * time.Second, 7500 * time.Millisecond, 7500 * time.Millisecond, 7500 * time.Millisecond},
		{"defaults, just under", 30 * time.Second, 7499 * time.Millisecond, 7500 * time.Millisecond, 0},
		{"a short hang_after: the check_interval is the floor", 2 * time.Second, 900 * time.Millisecond, time.Second, 0},
		{"a short hang_after, 1 s late", 2 * time.Second, time.Second, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _, procs, ev := newNode(t, 1, func(c *node.Config) { c.Supervisor.HangAfter, c.Supervisor.StaleAfter = tc.hang, tc.hang/2 })
			if got := n.LateAfter(); got != tc.lateAfter {
				t.Fatalf("LateAfter = %s, want %s", got, tc.lateAfter)
			}
			startWithOneFrame(n, "worker:discovery:0", at(time.Second))
			before, ok := n.Sup.WatchDeadline()
			if !ok || !before.Equal(at(time.Second+tc.hang)) {
				t.Fatalf("hang deadline %s, %v; want %s", before.Sub(t0), ok, time.Second+tc.hang)
			}
			asked := at(2 * time.Second)
			n.Woke(asked, asked.Add(tc.late))
			after, _ := n.Sup.WatchDeadline()
			if moved := after.Sub(before); moved != tc.moved {
				t.Fatalf("the hang deadline moved by %s; want %s", moved, tc.moved)
			}
			if n := len(ev.of("main_paused")); (n == 1) != (tc.moved > 0) || n > 1 {
				t.Fatalf("%d main_paused events", n)
			}
			n.Tick(ctx, asked.Add(tc.late))
			if procs.kills != 0 && tc.moved > 0 {
				t.Fatalf("killed on the tick after a discounted stop")
			}
		})
	}
}
