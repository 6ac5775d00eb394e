package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// simFiles are the test library's files under /lib, with their vectors
// of model set m1 (nil: none); f.flac has one of m2 only.
var simFiles = []struct {
	path string
	vec  []float32
}{
	{"/lib/Ann/One/a.flac", []float32{1, 0, 0, 0}},
	{"/lib/Ann/One/b.flac", []float32{0.8, 0.4, 0, 0}},
	{"/lib/Bob/Two/c.flac", []float32{0, 1, 0, 0}},
	{"/lib/Bob/Two/d.flac", []float32{0.3, 0.8, 0.3, 0}},
	{"/lib/Cat/Three/e.flac", nil},
	{"/lib/Dan/Four/f.flac", nil},
}

// simStore is a memstore holding simFiles (fillSim).
func simStore(t *testing.T) *memstore.Store {
	t.Helper()
	st := memstore.New(1)
	fillSim(t, st)
	return st
}

// simSQLite is a SQLite store holding simFiles (fillSim), safe for
// concurrent use.
func simSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fillSim(t, st)
	return st
}

// fillSim puts simFiles in st, their m1 vectors, f.flac's m2 vector and
// tags for a, b and c.
func fillSim(t *testing.T, st store.Store) {
	t.Helper()
	ctx := t.Context()
	for _, f := range simFiles {
		addFile(t, st, f.path, f.vec)
	}
	if err := st.PutTrackVector(ctx, library.Key("/lib/Dan/Four/f.flac"), "m2", []float32{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for p, mood := range map[string]string{"/lib/Ann/One/a.flac": "happy; party", "/lib/Ann/One/b.flac": "happy", "/lib/Bob/Two/c.flac": "sad"} {
		c := store.Claim{FileKey: library.Key(p), WorkerID: "i/w0", ClaimedAt: now, LeaseUntil: now.Add(time.Minute)}
		if _, err := st.Claim(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := st.Complete(ctx, store.Ref{FileKey: c.FileKey, WorkerID: c.WorkerID},
			store.Completion{Tags: map[string]string{"mood-regular": mood}, Version: "m1", At: now}); err != nil {
			t.Fatal(err)
		}
	}
}

// addFile stores a valid file at path and, when vec is given, its m1
// vector.
func addFile(t *testing.T, st store.Store, path string, vec []float32) string {
	t.Helper()
	key := library.Key(path)
	if _, err := st.UpsertFiles(t.Context(), []store.File{{Key: key, Path: path, Size: 1, IsValid: true, NeedsTagging: true}}); err != nil {
		t.Fatal(err)
	}
	if vec != nil {
		if err := st.PutTrackVector(t.Context(), key, "m1", vec); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

// simAPI serves the similarity routes of a SimilarAPI over st, its index
// of model set m1 built once, library_root root.
func simAPI(t *testing.T, st store.Store, root string) *httptest.Server {
	t.Helper()
	a := &SimilarAPI{Index: &SimilarIndex{Store: st, ModelSet: func() string { return "m1" }}, Store: st, Root: root}
	if err := a.Index.sync(t.Context(), "m1", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(&driver.API{Similarity: a}, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// get answers GET path with its status and decoded body.
func get(t *testing.T, ts *httptest.Server, path string) (int, map[string]any) {
	t.Helper()
	res, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %s: %v", path, b, err)
	}
	return res.StatusCode, m
}

// paths are the paths of an answer's tracks.
func paths(m map[string]any) []string {
	var out []string
	tracks, _ := m["tracks"].([]any)
	for _, x := range tracks {
		out = append(out, x.(map[string]any)["path"].(string))
	}
	return out
}

func TestSimilarAPIAnswers(t *testing.T) {
	ts := simAPI(t, simStore(t), "/lib")
	q := url.QueryEscape
	aKey := library.Key("/lib/Ann/One/a.flac")
	for _, c := range []struct{ path, want string }{
		{"/api/v1/similar?n=3&file=" + q("/lib/Ann/One/a.flac"), "/lib/Ann/One/b.flac /lib/Bob/Two/d.flac /lib/Bob/Two/c.flac"},
		{"/api/v1/similar?n=1&file=" + aKey, "/lib/Ann/One/b.flac"},
		{"/api/v1/similar?n=1&file=" + q("Ann/One/a.flac"), "/lib/Ann/One/b.flac"}, // from the root
		{"/api/v1/similar?n=1&file=" + q("/lib/Ann/./One/../One/a.flac"), "/lib/Ann/One/b.flac"},
		{"/api/v1/similar?n=3&offset=1&limit=1&file=" + aKey, "/lib/Bob/Two/d.flac"},
		{"/api/v1/path?n=3&from=" + q("/lib/Ann/One/a.flac") + "&to=" + q("/lib/Bob/Two/c.flac"), "/lib/Ann/One/a.flac /lib/Ann/One/b.flac /lib/Bob/Two/c.flac"},
	} {
		code, m := get(t, ts, c.path)
		if code != http.StatusOK || strings.Join(paths(m), " ") != c.want || m["model_set"] != "m1" {
			t.Errorf("%s: %d %v, want %s", c.path, code, m, c.want)
		}
	}
	code, m := get(t, ts, "/api/v1/similar?n=1&file="+aKey)
	first := m["tracks"].([]any)[0].(map[string]any)
	if code != 200 || first["artist"] != "Ann" || first["title"] != "b" || first["key"] != library.Key("/lib/Ann/One/b.flac") || first["score"].(float64) < 0.85 {
		t.Errorf("track %v", first)
	}
	code, m = get(t, ts, "/api/v1/mix?n=4&seed="+q("/lib/Ann/One/a.flac"))
	got := paths(m)
	if code != 200 || len(got) != 4 || got[0] != "/lib/Ann/One/a.flac" || m["total"] != 4.0 {
		t.Errorf("mix: %d %v", code, m)
	}
	for _, p := range got {
		if p == "/lib/Dan/Four/f.flac" || p == "/lib/Cat/Three/e.flac" {
			t.Errorf("mix holds %s, which has no m1 vector", p)
		}
	}
}

func TestSimilarAPIRefusals(t *testing.T) {
	st := simStore(t)
	ts := simAPI(t, st, "/lib")
	q := url.QueryEscape
	for _, c := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/api/v1/similar?file=" + q("/etc/passwd"), 400, "outside the library root"},
		{"/api/v1/similar?file=" + q("/lib/../etc/passwd"), 400, "outside the library root"},
		{"/api/v1/similar?file=" + q("../etc/passwd"), 400, "outside the library root"},
		{"/api/v1/similar?file=" + q("/library/Ann/One/a.flac"), 400, "outside the library root"},
		{"/api/v1/similar?file=" + q("/lib/Ann/One/zzz.flac"), 404, "not a file of the library"},
		{"/api/v1/similar?file=" + strings.Repeat("0", 32), 404, "not a file of the library"},
		{"/api/v1/similar?file=" + q("/lib/Cat/Three/e.flac"), 404, "no track vector of this model set"},
		{"/api/v1/similar?file=" + q("/lib/Dan/Four/f.flac"), 404, "no track vector of this model set"}, // m2's only
		{"/api/v1/similar?n=1001&file=" + q("/lib/Ann/One/a.flac"), 400, "n must be"},
		{"/api/v1/mix?seed=" + q("/lib/Ann/One/a.flac") + "&seed=" + q("Ann/One/a.flac"), 400, "given twice"},
		{"/api/v1/mix?seed=" + q("/lib/Ann/One/a.flac") + "&seed=" + q("/tmp/x.flac"), 400, "outside the library root"},
		{"/api/v1/path?from=" + q("/lib/Ann/One/a.flac") + "&to=" + q("/lib/Ann/One/a.flac"), 400, "same track"},
		{"/api/v1/path?from=" + q("/lib/Ann/One/a.flac") + "&to=" + q("/lib/Cat/Three/e.flac"), 404, "no track vector"},
	} {
		code, m := get(t, ts, c.path)
		if msg, _ := m["error"].(string); code != c.code || !strings.Contains(msg, c.contains) {
			t.Errorf("%s: %d %q, want %d %q", c.path, code, msg, c.code, c.contains)
		}
	}
	// Without a library root, a path must be absolute, and any stored one answers.
	noRoot := simAPI(t, st, "")
	if code, m := get(t, noRoot, "/api/v1/similar?file=Ann/One/a.flac"); code != 400 || !strings.Contains(m["error"].(string), "not an absolute path") {
		t.Errorf("relative path without a root: %d %v", code, m)
	}
	if code, m := get(t, noRoot, "/api/v1/similar?n=1&file="+q("/lib/Ann/One/a.flac")); code != 200 || len(paths(m)) != 1 {
		t.Errorf("absolute path without a root: %d %v", code, m)
	}
	// No index yet: 503.
	a := &SimilarAPI{Index: &SimilarIndex{Store: st, ModelSet: func() string { return "m1" }}, Store: st}
	if _, err := a.Similar(t.Context(), "/lib/Ann/One/a.flac", 1); err == nil || !strings.Contains(err.Error(), "being built") {
		t.Errorf("before the first build: %v", err)
	}
}

func TestSimilarAPIPlaylists(t *testing.T) {
	ts := simAPI(t, simStore(t), "/lib")
	code, m := get(t, ts, "/api/v1/playlists")
	var names []string
	for _, p := range m["playlists"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if code != 200 || strings.Join(names, ",") != "Mood - happy,Mood - party,Mood - sad" {
		t.Fatalf("playlists: %d %v", code, m)
	}
	code, m = get(t, ts, "/api/v1/playlists?limit=1&name="+url.QueryEscape("Mood - happy"))
	if code != 200 || strings.Join(paths(m), " ") != "/lib/Ann/One/a.flac" || m["total"] != 2.0 || m["next_offset"] != 1.0 {
		t.Errorf("Mood - happy, first page: %d %v", code, m)
	}
}

// TestSimilarIndexKeepsCurrent: serve's index service builds at start,
// picks up a vector put after start and a file forgotten, rebuilds for a
// new model set with that model set's vectors only, and publishes nothing
// when nothing changed.
func TestSimilarIndexKeepsCurrent(t *testing.T) {
	st := simSQLite(t)
	var modelSet atomic.Value
	modelSet.Store("m1")
	x := &SimilarIndex{Store: st, ModelSet: func() string { return modelSet.Load().(string) }, Probe: 2 * time.Millisecond, Resync: time.Hour}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	started := x.Refreshed()
	go func() { done <- x.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// waitFor waits, refresh by refresh, until cond holds of the index.
	waitFor := func(what string, cond func(s *Similar) bool) {
		t.Helper()
		deadline := time.NewTimer(10 * time.Second)
		defer deadline.Stop()
		for {
			ch := x.Refreshed()
			if s, _, err := x.Current(); err == nil && cond(s) {
				return
			}
			select {
			case <-ch:
			case <-deadline.C:
				t.Fatalf("the index never came to hold %s", what)
			}
		}
	}
	<-started
	if s, gen, err := x.Current(); err != nil || s.Len() != 4 || gen != 1 {
		t.Fatalf("at start: %v, generation %d, %v", s, gen, err)
	}

	// A file tagged after start: its vector comes in.
	g := addFile(t, st, "/lib/Eve/Five/g.flac", []float32{0, 0, 1, 0})
	waitFor("g.flac's vector", func(s *Similar) bool { _, ok := s.File(g); return ok })
	s, _, _ := x.Current()
	if near, err := s.Nearest(g, 1); err != nil || len(near) != 1 || near[0].File.Path != "/lib/Bob/Two/d.flac" {
		t.Errorf("g's nearest: %v %v", near, err)
	}

	// A file forgotten: its vector goes.
	b := library.Key("/lib/Ann/One/b.flac")
	if _, err := st.MarkMissing(t.Context(), []string{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ForgetMissing(t.Context(), []string{b}); err != nil {
		t.Fatal(err)
	}
	waitFor("no b.flac", func(s *Similar) bool { _, ok := s.File(b); return !ok })

	// Another model set: only its vectors.
	modelSet.Store("m2")
	waitFor("m2's vectors", func(s *Similar) bool { return s.ModelSet == "m2" })
	s, _, _ = x.Current()
	if _, ok := s.File(library.Key("/lib/Dan/Four/f.flac")); s.Len() != 1 || !ok {
		t.Errorf("m2's index holds %d tracks, f.flac %v", s.Len(), ok)
	}
}

// TestSimilarIndexSyncPublishesChangesOnly: a sync that finds what the
// index holds publishes nothing; one that finds a changed vector does.
func TestSimilarIndexSyncPublishesChangesOnly(t *testing.T) {
	st := simStore(t)
	x := &SimilarIndex{Store: st, ModelSet: func() string { return "m1" }}
	log := slog.New(slog.DiscardHandler)
	for range 2 {
		if err := x.sync(t.Context(), "m1", log); err != nil {
			t.Fatal(err)
		}
	}
	if _, gen, _ := x.Current(); gen != 1 {
		t.Errorf("two syncs of the same store: generation %d, want 1", gen)
	}
	if err := st.PutTrackVector(t.Context(), library.Key("/lib/Ann/One/a.flac"), "m1", []float32{0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := x.sync(t.Context(), "m1", log); err != nil {
		t.Fatal(err)
	}
	s, gen, _ := x.Current()
	if near, _ := s.Nearest(library.Key("/lib/Ann/One/a.flac"), 1); gen != 2 || len(near) != 1 || near[0].Score > 0.5 {
		t.Errorf("after a re-tag: generation %d, nearest %v", gen, near)
	}
	if err := x.sync(t.Context(), "", log); err != nil {
		t.Fatal(err)
	}
	if s, _, err := x.Current(); s != nil || err == nil || !strings.Contains(err.Error(), "no model set") {
		t.Errorf("without a model set: %v %v", s, err)
	}
}
