package sim

import (
	"github.com/nomarr/nomarr/core/store"
)

// checkClaimAllowed checks a claim that workerID made on file (a `claim`
// event, or a claim made in the store whose answer was lost) against what
// DESIGN §8 forbids a worker to claim.
//
// Paused (DESIGN §8: "if worker_enabled is false → paused, no new claims"):
// a claim is a violation when the store's worker_enabled flag reads false
// at the instant of the claim. The bound is exact: a worker reads the flag
// and claims in one Step, at one simulated instant, with nothing run
// between (the simulator is single-threaded, and every other store writer
// acts in another event); a worker that cannot read the flag (store down
// or erroring, a partition, a held lock) backs off and claims nothing in
// that Step; and a lost reply only ever loses the answer to a write that
// was made (a pause or resume whose answer was lost is in force, and the
// worker reads it), while the flag's read itself has no answer to lose.
func (c *checker) checkClaimAllowed(file, workerID string) {
	if v, ok := c.w.Store.MetaValue(store.MetaWorkerEnabled); !store.Enabled(v, ok) {
		c.violate("%s claims %s while the cluster is paused (worker_enabled=%q)", workerID, file, v)
	}
}
