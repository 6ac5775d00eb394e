package clockskew

import "time"

// How often the main process measures, and how.
const (
	// Every is the time between two measurements of a running main
	// process: clocks drift by milliseconds a day, so a step (a host
	// without NTP, a virtual machine resumed, an operator's `date -s`)
	// shows within five minutes.
	Every = 5 * time.Minute
	// Tries is how many requests one measurement makes in a row; it keeps
	// the one with the shortest round trip (Best).
	Tries = 3
	// Retry is the time to the next measurement after one in which no
	// request answered (the store down or not opened yet).
	Retry = 30 * time.Second
)

// State is the verdict on a measured offset.
type State string

const (
	// OK: the offset is not surely beyond Policy.Warn, and surely within
	// Policy.Danger.
	OK State = "ok"
	// Warn: the offset is surely beyond Policy.Warn.
	Warn State = "warn"
	// Dangerous: the offset is surely beyond Policy.Danger.
	Dangerous State = "dangerous"
	// Unknown: the round trip was too long to tell ok from warn.
	Unknown State = "unknown"
)

// Alarming reports whether s calls for the operator: warn or dangerous.
func (s State) Alarming() bool { return s == Warn || s == Dangerous }

// Policy holds the thresholds a host's offset to the store server's clock
// is judged by.
type Policy struct {
	Warn, Danger time.Duration
}

// ForLease is the policy for claims and node-name holds of lease_ttl ttl
// (30 s by default: warn beyond 5 s, dangerous beyond 10 s).
//
// Why these: a live claim is renewed every ttl/3 for ttl, so just before a
// renewal its lease has 2/3·ttl left; the deployment guide tells operators
// to keep ttl at least 3 × the store's worst stall, which may use up ttl/3
// of that. The remaining ttl/3 is the margin for the difference between
// two hosts' clocks: one host behind another by more than that lets the
// other's claim cleanup delete its live claims during a stall the guide
// allows. Danger is that margin, ttl/3: this host's offset alone uses it
// up against a host that keeps the server's time. Warn is half of it,
// ttl/6: two hosts each within it of the server are within ttl/3 of each
// other, so a cluster where every host is ok keeps the margin.
func ForLease(ttl time.Duration) Policy {
	return Policy{Warn: ttl / 6, Danger: ttl / 3}
}

// Reading is one measurement as judged: the best sample's offset and
// uncertainty, the verdict, and when it was taken (the sample's Received,
// by this host's clock).
type Reading struct {
	Offset, Uncertainty time.Duration
	State               State
	At                  time.Time
}

// Judge judges sample s:
//   - dangerous when |offset| - uncertainty > Danger,
//   - else warn when |offset| - uncertainty > Warn,
//   - else unknown when the round trip is longer than Warn: such a sample
//     cannot be called ok,
//   - else ok.
//
// So an ok sample's true offset is at most |offset| + uncertainty ≤
// Warn + round trip ≤ 2·Warn: within Danger for ForLease's thresholds. A
// long round trip does not hide a large offset: an offset surely beyond a
// threshold is judged so whatever the round trip.
func (p Policy) Judge(s Sample) Reading {
	off, unc := s.Offset(), s.Uncertainty()
	least := abs(off) - unc // the smallest the true offset can be
	st := OK
	switch {
	case least > p.Danger:
		st = Dangerous
	case least > p.Warn:
		st = Warn
	case s.RoundTrip() > p.Warn:
		st = Unknown
	}
	return Reading{Offset: off, Uncertainty: unc, State: st, At: s.Received}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
