package sim

import (
	"strings"

	"github.com/nomarr/nomarr/core/store"
)

// checkClaimAllowed checks a claim that workerID made on file (a `claim`
// event, or a claim made in the store whose answer was lost) against what
// docs/design.md §8 forbids a worker to claim.
//
// Paused (docs/design.md §8: "if worker_enabled is false → paused, no new claims"):
// a claim is a violation when the store's worker_enabled flag reads false
// at the instant of the claim. The bound is exact: a worker reads the flag
// and claims in one Step, at one simulated instant, with nothing run
// between (the simulator is single-threaded, and every other store writer
// acts in another event); a worker that cannot read the flag (store down
// or erroring, a partition, a held lock) backs off and claims nothing in
// that Step; and a lost reply only ever loses the answer to a write that
// was made (a pause or resume whose answer was lost is in force, and the
// worker reads it), while the flag's read itself has no answer to lose.
//
// Orphaned (docs/design.md §8: on main death "stop claiming, finish the current
// job, exit 0"): a claim is a violation once the worker has learnt that its
// main process died, that is once the simulator delivered the control
// pipe's EOF to its process (Process.mainDied, which tells the core worker
// at once; a process not booted yet is told as it boots). The simulator
// delivers it to every live worker in the instant of the main death, right
// after the main_death event, so a claim earlier in that instant, before
// the event, is legal, and every claim after it is not.
func (c *checker) checkClaimAllowed(file, workerID string) {
	if v, ok := c.w.Store.MetaValue(store.MetaWorkerEnabled); !store.Enabled(v, ok) {
		c.violate("%s claims %s while the cluster is paused (worker_enabled=%q)", workerID, file, v)
	}
	inst, comp, _ := strings.Cut(workerID, "/")
	if in := c.instance(inst); in != nil {
		if p := in.procs[comp]; p != nil && p.mainDead {
			c.violate("orphan %s claims %s after it learnt that its main process died", workerID, file)
		}
	}
}
