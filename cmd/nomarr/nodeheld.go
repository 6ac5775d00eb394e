package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// nodeInUse says why a main process may be running under the node name
// name on st ("" when none can be): a main process keeps its workers'
// restart state in memory and writes it over the store's, so an offline
// `nomarr workers reset` written behind it would be lost and report a
// success that did nothing. A hold whose process runs on this host, or
// whose end (by its holder's clock) has not passed, is in use; a hold
// handed back, lapsed, or whose process is gone is not.
func nodeInUse(ctx context.Context, st store.Meta, name string, ttl time.Duration) (string, error) {
	raw, _, err := st.GetMeta(ctx, node.NameKeyPrefix+name)
	if err != nil {
		return "", fmt.Errorf("reading the hold on node name %q: %w", name, err)
	}
	if why := node.Refusal(name, raw, time.Now(), ttl, process.Liveness); why != "" {
		return why, nil
	}
	var h node.NameHolder
	if raw == "" || json.Unmarshal([]byte(raw), &h) != nil || h.Instance == "" {
		return "", nil
	}
	if h.UntilMs > time.Now().UnixMilli() && process.Liveness(h) != node.Gone {
		return fmt.Sprintf("node %q is held by main process %s until %s: it may be running",
			name, h, time.UnixMilli(h.UntilMs).Format(time.DateTime)), nil
	}
	return "", nil
}
