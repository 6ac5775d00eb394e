package app

import (
	"context"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// NodeInUse says why a main process may be running under the node name
// name on st ("" when none can be): a main process keeps its workers'
// restart state in memory and writes it over the store's, so an offline
// `nomarr workers reset` written behind it would be lost and report a
// success that did nothing. The rule is the one a starting main process
// applies (node.InUse): a hold handed back, one whose process is known gone,
// or one whose end is more than a lease_ttl past is free; any other is in
// use.
func NodeInUse(ctx context.Context, st store.Meta, name string, ttl time.Duration) (string, error) {
	raw, _, err := st.GetMeta(ctx, node.NameKeyPrefix+name)
	if err != nil {
		return "", fmt.Errorf("reading the hold on node name %q: %w", name, err)
	}
	return node.InUse(name, raw, time.Now(), ttl, process.Liveness), nil
}

// nodeRefusal is why a main process starting now under s's node name would
// be refused it (node.Refusal; "" when it may start, or when the hold
// cannot be read: the start itself then decides). `tag` asks it before its
// scan, `serve` before it says it is serving and spawns anything.
func nodeRefusal(ctx context.Context, st store.Meta, s *Settings) string {
	name := s.Get("node")
	raw, _, err := st.GetMeta(ctx, node.NameKeyPrefix+name)
	if err != nil {
		return ""
	}
	return node.Refusal(name, raw, time.Now(), s.Core.LeaseTTL, process.Liveness)
}
