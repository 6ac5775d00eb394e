package worker_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/worker"
)

// TestCompletionStoresTrackVector: a job's track vector is stored with
// the model set of its tags after the completion; a job without one
// stores none; a vector the store refuses leaves the file tagged, with
// the failure counted and reported, and the store's breaker closed.
func TestCompletionStoresTrackVector(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b", "c")
	now := at(time.Second)
	res := ok()
	res.Vector = []float32{0.6, 0.8}
	key := r.job(now, time.Second, res)
	vs, err := r.st.TrackVectors(r.ctx, "v1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].FileKey != key || vs[0].Vector[1] != 0.8 {
		t.Fatalf("vectors after %s = %+v", key, vs)
	}

	now = now.Add(2 * time.Second)
	key = r.job(now, time.Second, ok())
	if vs, _ := r.st.TrackVectors(r.ctx, "v1", "", 0); len(vs) != 1 {
		t.Fatalf("a job without a vector stored one (%s): %+v", key, vs)
	}

	now = now.Add(2 * time.Second)
	res.Vector = []float32{float32(math.NaN())}
	key = r.job(now, time.Second, res)
	if f := r.file(key); !f.Tagged || f.NeedsTagging {
		t.Fatalf("file %s after a refused vector = %+v", key, f)
	}
	if n := r.w.VectorsUnstored(); n != 1 {
		t.Fatalf("VectorsUnstored = %d, want 1", n)
	}
	se := r.ev.of(event.StoreError)
	if len(se) != 1 || se[0].File != key || !strings.HasPrefix(se[0].Reason, "store track vector: ") {
		t.Fatalf("store_error events = %+v", se)
	}
	if tg := r.ev.of(event.Tagged); len(tg) != 3 {
		t.Fatalf("tagged events = %d, want 3", len(tg))
	}
	if s := r.step(now.Add(2 * time.Second)); s.Kind == worker.Wait && r.w.Phase() == "backing_off" {
		t.Fatalf("a refused vector backed the worker off")
	}
}
