package node

import (
	"time"

	"github.com/nomarr/nomarr/core/supervisor"
)

// ForceStop is the second stop: the supervisor kills every worker at once
// and gives up the store writes the stop waits for (supervisor.ForceStop;
// before any Stop it is a stop too). The node gives up one write more: the
// hand-back of its node name at the end of the stop (ReleaseName writes
// nothing). The hold then lapses after lease_ttl; a main process started
// again on this host takes the name at once all the same, since it sees
// this one gone (name.go). Idempotent.
func (n *Node) ForceStop(now time.Time) { n.Sup.ForceStop(now) }

// Abandoned is what a forced stop gave up: the supervisor's claim releases
// and restart-state saves, and the hand-back of the node name.
type Abandoned struct {
	supervisor.Abandoned
	// Name: the node name is held and not handed back; its hold lapses
	// lease_ttl after its last renewal.
	Name bool
}

// Empty reports whether nothing was given up.
func (a Abandoned) Empty() bool { return a.Abandoned.Empty() && !a.Name }

// Abandoned returns what a forced stop gave up so far, or what a stop gave
// up on a detached store (supervisor.Abandoned.Detached; the name's
// hand-back is then still tried, and ReleaseName says how it went); it is
// final once the stop is done.
func (n *Node) Abandoned() Abandoned {
	if !n.Sup.Forced() {
		return Abandoned{Abandoned: n.Sup.Abandoned()}
	}
	return Abandoned{Abandoned: n.Sup.Abandoned(), Name: n.holding()}
}

// WaitingOnStore reports whether a stop waits on the store alone, and for
// what (supervisor.WaitingOnStore).
func (n *Node) WaitingOnStore() (supervisor.StoreWait, bool) { return n.Sup.WaitingOnStore() }
