package storetest_test

import (
	"context"
	"testing"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/storetest"
	"github.com/nomarr/nomarr/core/store"
)

// mem gives memstore's inspection helpers the shape of the suite's optional
// reader interfaces.
type mem struct{ *memstore.Store }

func (m mem) Tags(_ context.Context, key string) (map[string]string, error) {
	return m.Store.Tags(key), nil
}

func (m mem) RecentHistory(_ context.Context, limit int) ([]store.HistoryRow, error) {
	h := m.History()
	if len(h) > limit {
		h = h[len(h)-limit:]
	}
	return h, nil
}

func TestMemstoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return mem{memstore.New(1)} })
}

func TestMemstoreConcurrent(t *testing.T) {
	shared := storetest.Locked(mem{memstore.New(1)})
	storetest.RunConcurrent(t, func(t *testing.T) store.Store { return shared })
}
