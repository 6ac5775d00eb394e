// Package clockskew measures this host's clock against the shared store
// server's clock and judges the difference against the claim lease.
//
// Claim leases (`lease_until = now + lease_ttl`) and node-name holds are
// written and judged by each host's own wall clock (docs/design.md §7). Hosts
// sharing one store must keep their clocks close: a host whose clock is
// behind writes leases that look expired early to the others (their claim
// cleanup deletes a live claim, and the file is analysed twice though
// tagged once); a host whose clock is ahead deletes the others' live
// claims itself, and keeps its own dead claims alive longer. Nothing here
// prevents that: the main process measures its offset to the store server's
// clock, the one clock every host can read, and says when it is too large
// (detection, not correction; leases keep their meaning).
//
// The package is pure: the driver reads its own clock around each request
// for the server's time and hands the three instants in (Sample); nothing
// here reads a clock or waits.
package clockskew

import "time"

// Sample is one reading of the store server's clock: Sent and Received are
// this host's clock right before the request and right after its answer,
// Server the time the server answered.
//
// The server read its clock at some instant between Sent and Received, so
// its offset to this host's clock is the midpoint estimate Offset, within
// Uncertainty either way (half the round trip), whatever the split of the
// round trip between the way there and the way back.
type Sample struct {
	Sent, Received, Server time.Time
}

// RoundTrip is how long the request took by this host's clock.
func (s Sample) RoundTrip() time.Duration { return s.Received.Sub(s.Sent) }

// Offset is the server's clock minus this host's, `ts - (t0+t1)/2`:
// positive when this host's clock is behind the server's, negative when it
// is ahead.
func (s Sample) Offset() time.Duration {
	return s.Server.Sub(s.Sent.Add(s.RoundTrip() / 2))
}

// Uncertainty is `(t1-t0)/2`: the true offset lies within Offset ±
// Uncertainty.
func (s Sample) Uncertainty() time.Duration { return s.RoundTrip() / 2 }

// valid reports whether the sample can be used: a round trip that is not
// negative (this host's clock did not go back during it) and a server time.
func (s Sample) valid() bool { return s.RoundTrip() >= 0 && !s.Server.IsZero() }

// Best is the usable sample with the shortest round trip (the first of
// equals), the most precise one: the round trips of a few requests made in
// a row differ by how long each waited on the network and the server, not
// by the offset. ok is false when none is usable.
func Best(samples []Sample) (best Sample, ok bool) {
	for _, s := range samples {
		if s.valid() && (!ok || s.RoundTrip() < best.RoundTrip()) {
			best, ok = s, true
		}
	}
	return best, ok
}

// Words says an offset (the server's clock minus this host's) as a person
// reads it before "the server's": "12.5s behind", "3s ahead of", "in line
// with".
func Words(offset time.Duration) string {
	switch {
	case offset > 0:
		return offset.String() + " behind"
	case offset < 0:
		return (-offset).String() + " ahead of"
	}
	return "in line with"
}
