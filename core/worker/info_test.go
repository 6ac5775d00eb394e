package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// TestCompletionStoresFileInfo: a completed job's file info is stored
// after its completion; a job without one stores none; one the store
// refuses fails nothing and is reported.
func TestCompletionStoresFileInfo(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b", "c")
	now := at(time.Second)
	res := ok()
	res.Info = &store.FileInfo{Artist: "Ann", Title: "One", Album: "First", DurationMs: 180_000}
	key := r.job(now, time.Second, res)
	if got, err := r.st.FileInfo(r.ctx, key); err != nil || got != *res.Info {
		t.Fatalf("info of %s = %+v, %v; want %+v", key, got, err, *res.Info)
	}

	now = now.Add(2 * time.Second)
	key = r.job(now, time.Second, ok())
	if got, err := r.st.FileInfo(r.ctx, key); err != nil || got != (store.FileInfo{}) {
		t.Fatalf("a job without info stored %+v, %v", got, err)
	}

	now = now.Add(2 * time.Second)
	res.Info = &store.FileInfo{DurationMs: -1}
	key = r.job(now, time.Second, res)
	if f := r.file(key); !f.Tagged || f.NeedsTagging {
		t.Fatalf("file %s after a refused info = %+v", key, f)
	}
	se := r.ev.of(event.StoreError)
	if len(se) != 1 || se[0].File != key || !strings.HasPrefix(se[0].Reason, "store file info: ") {
		t.Fatalf("store_error events = %+v", se)
	}
}
