package driver

import (
	"context"
	"sync"
	"time"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/storehealth"
)

// storeWatch keeps the storehealth.Watch of the main process's own store
// calls (every call its node makes, not the API's reads nor the workers'
// calls), with the clock that times them; safe for concurrent use (the
// API's pause and resume call the node off the loop). What a call says of
// the store is decided in core/storehealth.
type storeWatch struct {
	now func() time.Time
	mu  sync.Mutex
	w   storehealth.Watch
}

func newStoreWatch(now func() time.Time) *storeWatch {
	return &storeWatch{now: now}
}

// note records the outcome of one call of op made with ctx that returned
// err; write: it changes the store.
func (w *storeWatch) note(ctx context.Context, op string, write bool, err error) {
	o := storehealth.Classify(ctx, err)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w.Note(op, write, o, err, w.now())
}

// damaged records a call outside the node's (the API's reads) that found
// the database damaged (storehealth.Watch.Damaged).
func (w *storeWatch) damaged(op string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w.Damaged(op, err, w.now())
}

// health is a copy of the state now.
func (w *storeWatch) health() storehealth.Health {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Health()
}

// wrap returns st with its every call noted in w.
func (w *storeWatch) wrap(st store.Store) store.Store {
	return store.Wrap(func(ctx context.Context, op store.Op, call store.Call) error {
		err := call(ctx, st)
		w.note(ctx, op.Name, op.Writes, err)
		return err
	})
}
