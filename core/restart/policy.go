package restart

import (
	"fmt"
	"slices"
	"time"
)

// Invariants maintained by OnDeath, OnHealthy and Reset (for a valid Config
// and non-decreasing nowMs, starting from the zero State or a Reset one):
//
//   - Restarts granted within any half-open interval (t-Window, t] never
//     exceed WindowLimit.
//   - RestartCount never exceeds LifetimeLimit.
//   - The backoff of a granted restart is Config.Backoff(Consecutive) with
//     Consecutive taken before the death, hence in [BackoffBase, BackoffMax].
//   - Recent is sorted ascending and, right after OnDeath, holds only
//     timestamps > nowMs-Window.
//   - Once Failed, a State stays Failed until Reset.
//   - The returned State never shares Recent's backing array with the input
//     State; callers may keep and mutate either freely.
//
// OnHealthy must only be called with healthyFor no longer than the time since
// the last restart (the component cannot have been healthy longer than it has
// been running); the window invariant relies on that together with
// LifetimeReset >= Window.

// Failed reports whether the policy has given up on the component: it is not
// restarted again until a manual Reset.
func (s State) Failed() bool {
	return s.FailedAtWallMs != 0 || s.FailureReason != ""
}

// Counted reports whether s holds anything a Reset clears: restarts
// counted (lifetime, backoff exponent, window, last restart) or a
// failure. A state a Reset left holds none.
func (s State) Counted() bool {
	return s.RestartCount > 0 || s.Consecutive > 0 || len(s.Recent) > 0 || s.LastRestartWallMs != 0 || s.Failed()
}

// clone returns s with its own copy of Recent (nil stays nil).
func (s State) clone() State {
	if s.Recent != nil {
		s.Recent = slices.Clone(s.Recent)
	}
	return s
}

// OnDeath applies a death of the component at wall time nowMs (Unix ms) to st
// and returns the new State and the decision.
//
// A State that is already Failed stays Failed: Restart=false and Reason is
// the recorded FailureReason; only UpdatedAtWallMs changes.
//
// Otherwise Recent is pruned to the sliding window (timestamps > nowMs-Window
// are kept, those later than nowMs — the wall clock went back — as nowMs;
// the copy is also sorted, which is a no-op for well-formed states).
// The policy then gives up if len(Recent) >= WindowLimit (reason
// "restart window: N restarts within <Window>") or RestartCount >=
// LifetimeLimit (reason "lifetime limit: N restarts"), setting FailedAtWallMs
// = nowMs and FailureReason. If it does not give up it grants a restart with
// Backoff = c.Backoff(st.Consecutive); the new State has Consecutive+1,
// RestartCount+1, nowMs inserted into Recent (appended when time does not go
// backwards; Recent stays sorted in any case) and LastRestartWallMs = nowMs.
//
// UpdatedAtWallMs is nowMs in every case. The input State is never modified.
func OnDeath(c Config, st State, nowMs int64) (State, Decision) {
	ns := st.clone()
	ns.UpdatedAtWallMs = nowMs
	if st.Failed() {
		reason := st.FailureReason
		if reason == "" {
			reason = fmt.Sprintf("failed at %d", st.FailedAtWallMs)
		}
		return ns, Decision{Restart: false, Reason: reason}
	}

	cutoff := satSub(nowMs, c.windowMs())
	kept := make([]int64, 0, len(st.Recent)+1)
	for _, t := range st.Recent {
		if t > cutoff {
			// A restart later than now means the wall clock went back: it
			// counts as a restart now, so that it leaves the window one
			// Window from now instead of when the clock catches up with it.
			kept = append(kept, min(t, nowMs))
		}
	}
	slices.Sort(kept)

	var reason string
	switch {
	case len(kept) >= c.WindowLimit:
		reason = fmt.Sprintf("restart window: %d restarts within %v", len(kept), c.Window)
	case st.RestartCount >= c.LifetimeLimit:
		reason = fmt.Sprintf("lifetime limit: %d restarts", st.RestartCount)
	}
	if reason != "" {
		if len(kept) == 0 {
			kept = nil
		}
		ns.Recent = kept
		ns.FailedAtWallMs = nowMs
		ns.FailureReason = reason
		return ns, Decision{Restart: false, Reason: reason}
	}

	backoff := c.Backoff(st.Consecutive)
	i, _ := slices.BinarySearch(kept, nowMs)
	// Insert after equal timestamps so that equal times keep their order.
	for i < len(kept) && kept[i] == nowMs {
		i++
	}
	kept = slices.Insert(kept, i, nowMs)
	ns.Recent = kept
	ns.Consecutive = satInc(st.Consecutive)
	ns.RestartCount = satInc(st.RestartCount)
	ns.LastRestartWallMs = nowMs
	return ns, Decision{Restart: true, Backoff: backoff}
}

// OnHealthy is called while the component has been continuously healthy for
// healthyFor, at wall time nowMs. If healthyFor >= HealthyReset and
// Consecutive > 0, Consecutive becomes 0 (the backoff starts again at
// BackoffBase). If healthyFor >= LifetimeReset and RestartCount > 0 or Recent
// is non-empty, RestartCount becomes 0 and Recent nil. changed is true iff
// one of these happened, and then UpdatedAtWallMs = nowMs; otherwise the
// State is returned as it was.
//
// OnHealthy never clears a Failed State: a Failed State is returned unchanged
// with changed=false.
func OnHealthy(c Config, st State, healthyFor time.Duration, nowMs int64) (State, bool) {
	ns := st.clone()
	if !HealthyDue(c, st, healthyFor) {
		return ns, false
	}
	if healthyFor >= c.HealthyReset && ns.Consecutive > 0 {
		ns.Consecutive = 0
	}
	if healthyFor >= c.LifetimeReset && (ns.RestartCount > 0 || len(ns.Recent) > 0) {
		ns.RestartCount = 0
		ns.Recent = nil
	}
	ns.UpdatedAtWallMs = nowMs
	return ns, true
}

// HealthyDue reports, without allocating, whether OnHealthy would change st
// after healthyFor of continuous health. Callers on a hot path (the owner's
// tick) use it to skip OnHealthy when it would be a no-op.
func HealthyDue(c Config, st State, healthyFor time.Duration) bool {
	if st.Failed() {
		return false
	}
	return (healthyFor >= c.HealthyReset && st.Consecutive > 0) ||
		(healthyFor >= c.LifetimeReset && (st.RestartCount > 0 || len(st.Recent) > 0))
}

// Reset is the manual reset (CLI/API): every field is zero except Component,
// and UpdatedAtWallMs = nowMs. It is the only way out of a Failed State.
func Reset(st State, nowMs int64) State {
	return State{Component: st.Component, UpdatedAtWallMs: nowMs}
}

// satInc returns n+1, saturating at the maximum int.
func satInc(n int) int {
	if n == int(^uint(0)>>1) {
		return n
	}
	return n + 1
}
