package main

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// offlineResetIDs returns the components that `nomarr workers reset [ID]`
// resets in the store when no daemon runs. Without an ID: every configured
// worker. With one: that ID, when it names a configured worker
// (worker:discovery:N, N < workers) or a component with stored restart
// state on this node (a worker of a larger configuration earlier).
// Anything else is an error, as the daemon answers 404: writing a restart
// state for a typo would report success and reset nothing.
func offlineResetIDs(ctx context.Context, st store.RestartStates, node string, workers int, id string) ([]string, error) {
	if id == "" {
		ids := make([]string, 0, workers)
		for i := 0; i < workers; i++ {
			ids = append(ids, supervisor.ComponentID(i))
		}
		return ids, nil
	}
	for i := 0; i < workers; i++ {
		if supervisor.ComponentID(i) == id {
			return []string{id}, nil
		}
	}
	_, found, err := st.LoadRestart(ctx, supervisor.RestartKey(node, id))
	if err != nil {
		return nil, fmt.Errorf("reading the restart state of %q: %w", id, err)
	}
	if !found {
		return nil, fmt.Errorf("no worker %q (configured: %s … %s)", id,
			supervisor.ComponentID(0), supervisor.ComponentID(workers-1))
	}
	return []string{id}, nil
}
