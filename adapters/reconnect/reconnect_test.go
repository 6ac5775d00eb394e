package reconnect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/store"
)

func TestOpensLazilyAndRetries(t *testing.T) {
	ctx := context.Background()
	down := errors.New("connection refused")
	opens := 0
	ready := false
	s := New(func(context.Context) (store.Store, error) {
		opens++
		if !ready {
			return nil, down
		}
		return memstore.New(1), nil
	}, time.Second)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }

	if opens != 0 {
		t.Fatal("opened before first use")
	}
	_, _, err := s.GetMeta(ctx, "x")
	if !errors.Is(err, down) || !store.IsFault(err) {
		t.Fatalf("err = %v, want a fault wrapping the open error", err)
	}
	_, _, _ = s.GetMeta(ctx, "x") // within minRetry: no new attempt
	if opens != 1 {
		t.Fatalf("%d open attempts within the retry interval, want 1", opens)
	}
	ready = true
	clock = clock.Add(time.Second)
	if err := s.SetMeta(ctx, "x", "1"); err != nil {
		t.Fatalf("after the store came up: %v", err)
	}
	if v, ok, err := s.GetMeta(ctx, "x"); err != nil || !ok || v != "1" {
		t.Fatalf("GetMeta = %q %v %v", v, ok, err)
	}
	if opens != 2 {
		t.Fatalf("%d opens, want 2", opens)
	}
}
