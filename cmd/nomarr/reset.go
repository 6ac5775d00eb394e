package main

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// offlineResetIDs returns the components that `nomarr workers reset [ID]`
// resets in the store when no daemon runs. Without an ID: every configured
// worker whose stored restart state is failed, as the daemon resets only
// its failed workers; a worker that is crash-looping but not failed keeps
// its window and lifetime counts. With one: that ID when it has restart
// state to clear (restart.State.Counted) on this node, a configured worker
// (worker:discovery:N, N < workers) or not (one of a larger configuration
// earlier); none for a configured worker with nothing to clear, since a
// reset creates no state (a row written for it would make the ID
// resettable once the configuration is smaller again). Anything else is
// an error, as the daemon answers 404: writing a restart state for a typo
// would report success and reset nothing.
func offlineResetIDs(ctx context.Context, st store.RestartStates, node string, workers int, id string) ([]string, error) {
	if id == "" {
		var ids []string
		for i := 0; i < workers; i++ {
			c := supervisor.ComponentID(i)
			rs, found, err := st.LoadRestart(ctx, supervisor.RestartKey(node, c))
			if err != nil {
				return nil, fmt.Errorf("reading the restart state of %q: %w", c, err)
			}
			if found && rs.Failed() {
				ids = append(ids, c)
			}
		}
		return ids, nil
	}
	rs, found, err := st.LoadRestart(ctx, supervisor.RestartKey(node, id))
	if err != nil {
		return nil, fmt.Errorf("reading the restart state of %q: %w", id, err)
	}
	if found && rs.Counted() {
		return []string{id}, nil
	}
	for i := 0; i < workers; i++ {
		if supervisor.ComponentID(i) == id {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("no worker %q (configured: %s … %s)", id,
		supervisor.ComponentID(0), supervisor.ComponentID(workers-1))
}
