// Package restartfuzz fuzzes the restart policy of core/restart (docs/design.md §5).
package restartfuzz

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/restart"
)

// Input layout (all fields optional; missing bytes read as zero):
//
//	header (15 bytes)
//	  [0]  BackoffBase   = (b%16+1) ms
//	  [1]  BackoffMax    = BackoffBase * (b%64+1)
//	  [2]  WindowLimit   = b%6+1
//	  [3]  Window        = (b+1)*10 ms
//	  [4]  LifetimeLimit = b%25+1
//	  [5]  HealthyReset  = (b+1)*10 ms
//	  [6]  LifetimeReset = Window + b*20 ms
//	  [7:15] start wall ms = little-endian uint64 >> 2
//	events, 4 bytes each: kind, delta ms (little-endian uint16), param
//	  kind%8 in 0..4: death
//	  kind%8 in 5..6: healthy for (running time)*param/255, where running
//	                  time is the time since the last restart or reset
//	  kind%8 == 7:    manual reset
const (
	headerLen = 15
	eventLen  = 4
)

type decoder struct{ b []byte }

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = d.byte()
	}
	return out
}

func decodeConfig(d *decoder) restart.Config {
	ms := time.Millisecond
	h := d.bytes(7)
	base := time.Duration(h[0]%16+1) * ms
	window := time.Duration(int(h[3])+1) * 10 * ms
	return restart.Config{
		BackoffBase:   base,
		BackoffMax:    base * time.Duration(h[1]%64+1),
		WindowLimit:   int(h[2]%6) + 1,
		Window:        window,
		LifetimeLimit: int(h[4]%25) + 1,
		HealthyReset:  time.Duration(int(h[5])+1) * 10 * ms,
		LifetimeReset: window + time.Duration(h[6])*20*ms,
	}
}

func FuzzOnDeath(f *testing.F) {
	ev := func(kind byte, delta uint16, param byte) []byte {
		return []byte{kind, byte(delta), byte(delta >> 8), param}
	}
	seq := func(header []byte, events ...[]byte) []byte {
		out := slices.Clone(header)
		for _, e := range events {
			out = append(out, e...)
		}
		return out
	}
	// base 1 ms, max 60 ms, 5 in 300 ms, lifetime 20, healthy 50 ms, lifetime reset 300+200 ms.
	hdr := []byte{0, 59, 4, 29, 19, 4, 10, 0, 0, 0, 0, 0, 0, 0, 1}
	var crashLoop, spaced, healthy [][]byte
	for i := 0; i < 8; i++ {
		crashLoop = append(crashLoop, ev(0, 10, 0))
	}
	for i := 0; i < 25; i++ {
		spaced = append(spaced, ev(1, 70, 0))
	}
	for i := 0; i < 6; i++ {
		healthy = append(healthy, ev(2, 5, 0), ev(5, 600, 255))
	}
	f.Add([]byte{})
	f.Add(seq(hdr, crashLoop...))
	f.Add(seq(hdr, spaced...))
	f.Add(seq(hdr, healthy...))
	f.Add(seq(hdr, append(crashLoop, ev(7, 1, 0), ev(0, 1, 0), ev(6, 1000, 128))...))
	f.Add(seq([]byte{255, 255, 255, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255}, ev(0, 0, 0), ev(0, 0, 0), ev(0, 65535, 0), ev(0, 0, 0)))

	f.Fuzz(func(t *testing.T, data []byte) {
		d := &decoder{b: data}
		c := decodeConfig(d)
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded config invalid: %v", err)
		}
		winMs := c.Window.Milliseconds()
		now := int64(binary.LittleEndian.Uint64(d.bytes(8)) >> 2)

		st := restart.State{Component: "worker:discovery:0"}
		startedAt := now // last restart or reset: bounds how long it can have been healthy
		var grants []int64
		sinceLifetime := 0
		failed := false

		for step := 0; len(d.b) > 0; step++ {
			e := d.bytes(eventLen)
			now += int64(binary.LittleEndian.Uint16(e[1:3]))
			prev := st
			prevRecent := slices.Clone(st.Recent)

			switch k := e[0] % 8; {
			case k <= 4: // death
				var dec restart.Decision
				st, dec = restart.OnDeath(c, st, now)
				if st.UpdatedAtWallMs != now {
					t.Fatalf("step %d: UpdatedAtWallMs %d, want %d", step, st.UpdatedAtWallMs, now)
				}
				// Model of the window: grants since the last reset still inside (now-W, now].
				var inWindow []int64
				for _, g := range grants {
					if g > now-winMs {
						inWindow = append(inWindow, g)
					}
				}
				if failed {
					if dec.Restart || !st.Failed() || st.FailureReason != prev.FailureReason ||
						st.FailedAtWallMs != prev.FailedAtWallMs || dec.Reason != prev.FailureReason {
						t.Fatalf("step %d: failed state not sticky: %+v -> %+v (%+v)", step, prev, st, dec)
					}
					break
				}
				if !dec.Restart {
					windowFull := len(inWindow) >= c.WindowLimit
					lifetimeFull := prev.RestartCount >= c.LifetimeLimit
					if !windowFull && !lifetimeFull {
						t.Fatalf("step %d: refused without cause (window %d/%d, lifetime %d/%d): %q",
							step, len(inWindow), c.WindowLimit, prev.RestartCount, c.LifetimeLimit, dec.Reason)
					}
					want := "lifetime limit:"
					if windowFull {
						want = "restart window:"
					}
					if !st.Failed() || st.FailedAtWallMs != now || dec.Reason != st.FailureReason ||
						!strings.HasPrefix(dec.Reason, want) {
						t.Fatalf("step %d: bad give-up: %+v %+v", step, dec, st)
					}
					if !slices.Equal(st.Recent, inWindow) {
						t.Fatalf("step %d: Recent %v, model %v", step, st.Recent, inWindow)
					}
					failed = true
					break
				}
				// Granted.
				if dec.Backoff < c.BackoffBase || dec.Backoff > c.BackoffMax || dec.Backoff != c.Backoff(prev.Consecutive) {
					t.Fatalf("step %d: backoff %v (n=%d, base %v, max %v)", step, dec.Backoff, prev.Consecutive, c.BackoffBase, c.BackoffMax)
				}
				grants = append(grants, now)
				inWindow = append(inWindow, now)
				sinceLifetime++
				startedAt = now
				if len(inWindow) > c.WindowLimit {
					t.Fatalf("step %d: %d restarts within %v, limit %d", step, len(inWindow), c.Window, c.WindowLimit)
				}
				if st.RestartCount > c.LifetimeLimit || st.RestartCount != sinceLifetime {
					t.Fatalf("step %d: RestartCount %d (model %d), limit %d", step, st.RestartCount, sinceLifetime, c.LifetimeLimit)
				}
				if st.Consecutive != prev.Consecutive+1 || st.LastRestartWallMs != now {
					t.Fatalf("step %d: counters %+v -> %+v", step, prev, st)
				}
				if !slices.Equal(st.Recent, inWindow) {
					t.Fatalf("step %d: Recent %v, model %v", step, st.Recent, inWindow)
				}

			case k <= 6: // healthy
				healthyFor := time.Duration((now-startedAt)*int64(e[3])/255) * time.Millisecond
				var changed bool
				st, changed = restart.OnHealthy(c, st, healthyFor, now)
				if failed {
					if changed || !st.Failed() || st.UpdatedAtWallMs != prev.UpdatedAtWallMs {
						t.Fatalf("step %d: OnHealthy touched a failed state", step)
					}
					break
				}
				wantCons := prev.Consecutive
				if healthyFor >= c.HealthyReset {
					wantCons = 0
				}
				wantCount, wantRecent := prev.RestartCount, prevRecent
				if healthyFor >= c.LifetimeReset {
					wantCount, wantRecent = 0, nil
					sinceLifetime = 0
				}
				wantChanged := wantCons != prev.Consecutive || wantCount != prev.RestartCount || len(wantRecent) != len(prevRecent)
				if st.Consecutive != wantCons || st.RestartCount != wantCount || !slices.Equal(st.Recent, wantRecent) || changed != wantChanged {
					t.Fatalf("step %d: OnHealthy(%v) %+v -> %+v changed=%v", step, healthyFor, prev, st, changed)
				}
				if changed && st.UpdatedAtWallMs != now || !changed && st.UpdatedAtWallMs != prev.UpdatedAtWallMs {
					t.Fatalf("step %d: UpdatedAtWallMs %d", step, st.UpdatedAtWallMs)
				}

			default: // manual reset
				st = restart.Reset(st, now)
				if st.Failed() || st.RestartCount != 0 || st.Consecutive != 0 || st.Recent != nil ||
					st.LastRestartWallMs != 0 || st.UpdatedAtWallMs != now || st.Component != prev.Component {
					t.Fatalf("step %d: Reset = %+v", step, st)
				}
				grants, sinceLifetime, failed, startedAt = nil, 0, false, now
			}

			// Invariants after every step.
			if !slices.Equal(prev.Recent, prevRecent) {
				t.Fatalf("step %d: input Recent mutated", step)
			}
			if !slices.IsSorted(st.Recent) {
				t.Fatalf("step %d: Recent unsorted: %v", step, st.Recent)
			}
			if len(st.Recent) > c.WindowLimit || st.RestartCount > c.LifetimeLimit || st.RestartCount < 0 || st.Consecutive < 0 {
				t.Fatalf("step %d: limits exceeded: %+v", step, st)
			}
			if failed != st.Failed() {
				t.Fatalf("step %d: Failed() = %v, model %v", step, st.Failed(), failed)
			}
			if len(st.Recent) > 0 && len(prev.Recent) > 0 && &st.Recent[0] == &prev.Recent[0] {
				t.Fatalf("step %d: Recent aliases the input", step)
			}
		}
	})
}
