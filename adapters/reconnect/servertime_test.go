package reconnect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/store"
)

// clocked is a store with a server clock.
type clocked struct {
	*memstore.Store
	at time.Time
}

func (c clocked) ServerTime(context.Context) (time.Time, error) { return c.at, nil }

// The server clock of the store opened is forwarded; a store without one
// says so with store.ErrNoServerClock, and a store not open yet fails as
// every call does.
func TestServerTimeForwarded(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down := errors.New("connection refused")
	var open store.Store
	s := New(func(context.Context) (store.Store, error) {
		if open == nil {
			return nil, down
		}
		return open, nil
	}, 0)
	if _, err := s.ServerTime(ctx); !errors.Is(err, down) || errors.Is(err, store.ErrNoServerClock) {
		t.Fatalf("ServerTime before the store opens: %v, want the open's error", err)
	}
	open = clocked{Store: memstore.New(1), at: at}
	if got, err := s.ServerTime(ctx); err != nil || !got.Equal(at) {
		t.Fatalf("ServerTime = %v, %v; want the server's %v", got, err, at)
	}

	plain := New(func(context.Context) (store.Store, error) { return memstore.New(1), nil }, 0)
	if _, err := plain.ServerTime(ctx); !errors.Is(err, store.ErrNoServerClock) {
		t.Fatalf("ServerTime of a store without a server clock: %v, want ErrNoServerClock", err)
	}
}
