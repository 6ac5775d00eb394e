package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/clockskew"
	"github.com/nomarr/nomarr/core/store"
)

// skewWatch keeps the main process's clock readings (clockskew.Watch)
// behind a lock: WatchClock notes them, the API reads the last.
type skewWatch struct {
	mu sync.Mutex
	w  clockskew.Watch
}

func (s *skewWatch) note(r clockskew.Reading) (from clockskew.State, changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Note(r)
}

func (s *skewWatch) last() (clockskew.Reading, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Last()
}

// ClockSkew is the last measurement of this host's clock against the
// store server's (WatchClock); ok is false while there is none: a store
// without a server clock, or none answered yet. Safe from any goroutine.
func (m *Main) ClockSkew() (r clockskew.Reading, ok bool) { return m.skew.last() }

// WatchClock measures this host's clock against the store server's, when
// the store has one (store.ServerClock), now and every clockskew.Every
// (clockskew.Retry after a measurement that got no answer), until ctx ends
// or the loop has stopped; ClockSkew shows the last reading. Each reading
// is judged by the thresholds of leaseTTL (clockskew.ForLease), and a
// change of verdict is logged once: WARN when the clock is off (warn or
// dangerous), with what to do; INFO when it is back in line, or first
// found so, and when the store's answer came too slowly to tell. A store
// without a server clock returns at once, measuring nothing. It runs off
// the main loop, which it never waits for.
func (m *Main) WatchClock(ctx context.Context, leaseTTL time.Duration) {
	sc, ok := m.Store.(store.ServerClock)
	if !ok {
		return
	}
	p := clockskew.ForLease(leaseTTL)
	for {
		next := clockskew.Every
		s, err := SampleClock(ctx, sc, m.Clock.Now)
		switch {
		case errors.Is(err, store.ErrNoServerClock):
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			// The store's outage is reported by its own calls; the last
			// reading stands until one answers.
			m.Log.Debug("clock not checked against the store server's", "err", err)
			next = clockskew.Retry
		default:
			m.noteClock(p, leaseTTL, p.Judge(s))
		}
		t := m.Clock.Timer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// noteClock records r and logs a change of verdict.
func (m *Main) noteClock(p clockskew.Policy, leaseTTL time.Duration, r clockskew.Reading) {
	from, changed := m.skew.note(r)
	if !changed {
		return
	}
	attrs := []any{"clock_skew", string(r.State), "offset", r.Offset, "uncertainty", r.Uncertainty}
	switch {
	case r.State.Alarming():
		m.Log.Warn("this host's clock is off the store server's: claim leases and node-name holds are judged by each host's clock, "+
			"so other hosts may take this host's live claims, or keep its dead ones too long; "+
			"synchronise the clocks of every host and of the store's server (NTP: chrony, systemd-timesyncd)",
			append(attrs, "clock", clockskew.Words(r.Offset)+" the server's", "warn_beyond", p.Warn, "dangerous_beyond", p.Danger, "lease_ttl", leaseTTL)...)
	case r.State == clockskew.Unknown:
		m.Log.Info("clock offset to the store server's unknown: its answer came too slowly to tell", append(attrs, "round_trip", 2*r.Uncertainty)...)
	case from != "":
		m.Log.Info("clock back in line with the store server's", append(attrs, "was", string(from))...)
	default:
		m.Log.Info("clock checked against the store server's", attrs...)
	}
}

// SampleClock measures this host's clock, read by now, against sc's:
// clockskew.Tries requests in a row, the one with the shortest round trip
// kept (clockskew.Best). It fails when none answered (the last error), at
// once when the store has no server clock (store.ErrNoServerClock).
func SampleClock(ctx context.Context, sc store.ServerClock, now func() time.Time) (clockskew.Sample, error) {
	samples := make([]clockskew.Sample, 0, clockskew.Tries)
	var lastErr error
	for range clockskew.Tries {
		t0 := now()
		ts, err := sc.ServerTime(ctx)
		t1 := now()
		if errors.Is(err, store.ErrNoServerClock) {
			return clockskew.Sample{}, err
		}
		if err != nil {
			lastErr = err
			continue
		}
		samples = append(samples, clockskew.Sample{Sent: t0, Received: t1, Server: ts})
	}
	best, ok := clockskew.Best(samples)
	if !ok {
		if lastErr == nil {
			lastErr = errors.New("no usable answer (no time, or this host's clock went back during the request)")
		}
		return clockskew.Sample{}, fmt.Errorf("reading the store server's clock: %w", lastErr)
	}
	return best, nil
}
