package store

import (
	"context"
	"errors"
	"time"
)

// ServerClock is an optional capability of a Store whose data lives on a
// server with a clock of its own, which every host sharing the store can
// read: the main process measures its own clock's offset to it
// (core/clockskew), since claim leases and node-name holds are written and
// judged by each host's clock. A caller checks for it with a type
// assertion.
//
// ArangoDB implements it (the server's GET /_admin/time). SQLite does not:
// its hosts share one file on one machine (never over a network file
// system), so they share one clock and there is no skew to measure. The
// simulator's store does not either: its hosts share the virtual clock.
type ServerClock interface {
	// ServerTime returns the server's clock now, read once: the caller
	// times the call with its own clock around it, and a retry inside
	// would only lengthen that round trip. An error wrapping
	// ErrNoServerClock says the store turned out to have no server clock
	// (a wrapper that forwards to a store it opens lazily, ServerClock or
	// not); any other error is a fault, and a later call may answer.
	ServerTime(ctx context.Context) (time.Time, error)
}

// ErrNoServerClock: the store has no server clock (see ServerClock).
var ErrNoServerClock = errors.New("store: no server clock")
