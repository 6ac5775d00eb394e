package storetest

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// putVector stores a track vector and fails the test on an error.
func (h *h) putVector(key, modelSet string, vec ...float32) {
	h.Helper()
	if err := h.st.PutTrackVector(h.Context(), key, modelSet, vec); err != nil {
		h.Fatalf("PutTrackVector(%s, %s): %v", key, modelSet, err)
	}
}

// wantVectors reads modelSet's vectors after the cursor and compares them
// with want, a file key and its coordinates each.
func (h *h) wantVectors(modelSet, after string, limit int, want ...store.TrackVector) {
	h.Helper()
	got, err := h.st.TrackVectors(h.Context(), modelSet, after, limit)
	if err != nil {
		h.Fatalf("TrackVectors(%s, %q, %d): %v", modelSet, after, limit, err)
	}
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].FileKey == want[i].FileKey && got[i].ModelSet == modelSet && slices.Equal(got[i].Vector, want[i].Vector)
	}
	if !same {
		h.Fatalf("TrackVectors(%s, %q, %d) = %+v, want %+v", modelSet, after, limit, got, want)
	}
}

func vec(key string, v ...float32) store.TrackVector {
	return store.TrackVector{FileKey: key, Vector: v}
}

// testTrackVectors: vectors come back exactly as put (float32 bits),
// in key order, paged, and only those of the model set asked for.
func testTrackVectors(h *h) {
	h.upsertKeys("a", "b", "c", "d", "e")
	tiny, huge := float32(math.SmallestNonzeroFloat32), float32(math.MaxFloat32)
	h.putVector("c", "m1", 0.1, -0.2, tiny)
	h.putVector("a", "m1", 1, 0, huge)
	h.putVector("b", "m2", 0.5, 0.5, 0.5)
	h.putVector("d", "m1", -1, 1e-7, 0.3333333)
	a, c, d := vec("a", 1, 0, huge), vec("c", 0.1, -0.2, tiny), vec("d", -1, 1e-7, 0.3333333)
	h.wantVectors("m1", "", 0, a, c, d)
	h.wantVectors("m1", "", 2, a, c)
	h.wantVectors("m1", "a", 2, c, d)
	h.wantVectors("m1", "d", 0)
	h.wantVectors("m2", "", 0, vec("b", 0.5, 0.5, 0.5))
	h.wantVectors("m3", "", 0)
	// The vector's width is what was put.
	wide := make([]float32, 200)
	for i := range wide {
		wide[i] = float32(i) / 200
	}
	h.putVector("e", "m1", wide...)
	h.wantVectors("m1", "d", 0, vec("e", wide...))
}

// testTrackVectorReplaced: a file holds one vector, the last put, whatever
// its model set; a query on the old model set no longer finds it.
func testTrackVectorReplaced(h *h) {
	h.upsertKeys("a", "b")
	h.putVector("a", "m1", 1, 0)
	h.putVector("b", "m1", 0, 1)
	h.putVector("a", "m1", 0.6, 0.8)
	h.wantVectors("m1", "", 0, vec("a", 0.6, 0.8), vec("b", 0, 1))
	h.putVector("a", "m2", 0.8, 0.6, 0)
	h.wantVectors("m1", "", 0, vec("b", 0, 1))
	h.wantVectors("m2", "", 0, vec("a", 0.8, 0.6, 0))
	// A changed file keeps its vector until the next completion's
	// replaces it.
	changed := NewFile("a")
	changed.Size++
	h.upsert(changed)
	h.wantVectors("m2", "", 0, vec("a", 0.8, 0.6, 0))
}

// testTrackVectorRefused: a vector of an unknown file is ErrNotFound; an
// empty, non-finite or unnamed one is an error; neither stores anything.
func testTrackVectorRefused(h *h) {
	h.upsertKeys("a")
	err := h.st.PutTrackVector(h.Context(), "nosuch", "m1", []float32{1})
	wantSemantic(h.T, "PutTrackVector(nosuch)", err, store.ErrNotFound)
	nan := float32(math.NaN())
	for i, bad := range []struct {
		modelSet string
		vec      []float32
	}{
		{"", []float32{1}},
		{"m1", nil},
		{"m1", []float32{1, nan}},
		{"m1", []float32{float32(math.Inf(-1))}},
		{"m1", make([]float32, store.MaxVectorDims+1)},
	} {
		if err := h.st.PutTrackVector(h.Context(), "a", bad.modelSet, bad.vec); err == nil {
			h.Fatalf("bad vector %d (%q, %d dims) stored", i, bad.modelSet, len(bad.vec))
		}
	}
	h.wantVectors("m1", "", 0)
	h.wantVectors("", "", 0)
}

// testTrackVectorForgotten: a forgotten file's vector goes with it, and
// the file found again has none.
func testTrackVectorForgotten(h *h) {
	h.upsertKeys("gone", "kept")
	h.putVector("gone", "m1", 1, 0)
	h.putVector("kept", "m1", 0, 1)
	if _, err := h.st.MarkMissing(h.Context(), []string{"gone", "kept"}); err != nil {
		h.Fatal(err)
	}
	// Missing is not forgotten: the vector stays.
	h.wantVectors("m1", "", 0, vec("gone", 1, 0), vec("kept", 0, 1))
	h.upsertKeys("kept")
	if n, err := h.st.ForgetMissing(h.Context(), []string{"gone", "kept"}); err != nil || n != 1 {
		h.Fatalf("ForgetMissing = %d, %v; want 1", n, err)
	}
	h.wantVectors("m1", "", 0, vec("kept", 0, 1))
	h.upsertKeys("gone")
	h.wantVectors("m1", "", 0, vec("kept", 0, 1))
}

// testListTags: the tags and version of each file's last completion, in
// key order, paged; a file never completed has none, a forgotten file's
// go with it.
func testListTags(h *h) {
	h.upsertKeys("a", "b", "c", "d")
	done := func(key string, c store.Completion) {
		h.Helper()
		h.claim(key, "i/w0", T0, time.Minute)
		h.complete(key, "i/w0", c)
	}
	done("c", store.Completion{Tags: map[string]string{"mood": "sad", "nom_version": "v1"}, Version: "v1", At: T0})
	done("a", store.Completion{Tags: map[string]string{"mood": "happy"}, Version: "v1", At: T0})
	done("d", store.Completion{Version: "v2", At: T0})
	want := []store.FileTags{
		{FileKey: "a", Version: "v1", Tags: map[string]string{"mood": "happy"}},
		{FileKey: "c", Version: "v1", Tags: map[string]string{"mood": "sad", "nom_version": "v1"}},
		{FileKey: "d", Version: "v2", Tags: map[string]string{}},
	}
	check := func(after string, limit int, want []store.FileTags) {
		h.Helper()
		got, err := h.st.ListTags(h.Context(), after, limit)
		if err != nil {
			h.Fatalf("ListTags(%q, %d): %v", after, limit, err)
		}
		if !slices.EqualFunc(got, want, func(a, b store.FileTags) bool {
			return a.FileKey == b.FileKey && a.Version == b.Version && maps.Equal(a.Tags, b.Tags) && a.Tags != nil
		}) {
			h.Fatalf("ListTags(%q, %d) = %s, want %s", after, limit, fmt.Sprint(got), fmt.Sprint(want))
		}
	}
	check("", 0, want)
	check("", 2, want[:2])
	check("a", 1, want[1:2])
	check("d", 0, nil)
	if _, err := h.st.MarkMissing(h.Context(), []string{"c"}); err != nil {
		h.Fatal(err)
	}
	if _, err := h.st.ForgetMissing(h.Context(), []string{"c"}); err != nil {
		h.Fatal(err)
	}
	check("", 0, []store.FileTags{want[0], want[2]})
}
