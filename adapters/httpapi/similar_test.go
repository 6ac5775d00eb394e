package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeSimilarity answers from a fixed pool of tracks and records calls.
// A file argument "missing" is unknown (ErrNotFound), "outside" is
// refused (ErrInvalid), "down" is unavailable, "broken" a plain error.
type fakeSimilarity struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeSimilarity) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeSimilarity) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

func fakeTracks(prefix string, n int) []Track {
	out := make([]Track, n)
	for i := range out {
		out[i] = Track{Key: fmt.Sprintf("%s%d", prefix, i), Path: fmt.Sprintf("/lib/A/B/%s%d.flac", prefix, i), Title: fmt.Sprintf("%s%d", prefix, i)}
	}
	return out
}

func fakeErr(files ...string) error {
	for _, f := range files {
		switch f {
		case "missing":
			return fmt.Errorf("%w: %q: not a file of the library", ErrNotFound, f)
		case "outside":
			return fmt.Errorf("%w: %q is outside the library root", ErrInvalid, f)
		case "down":
			return fmt.Errorf("%w: the similarity index is being built", ErrUnavailable)
		case "broken":
			return errors.New("sqlite: secret connection detail")
		}
	}
	return nil
}

func (f *fakeSimilarity) Similar(_ context.Context, file string, n int) (TrackList, error) {
	f.record(fmt.Sprintf("similar %s %d", file, n))
	if err := fakeErr(file); err != nil {
		return TrackList{}, err
	}
	tracks := fakeTracks("s", n)
	for i := range tracks {
		score := 1 - float32(i)/100
		tracks[i].Score = &score
	}
	return TrackList{ModelSet: "m1", Generation: 7, Tracks: tracks}, nil
}

func (f *fakeSimilarity) Mix(_ context.Context, seeds []string, n int) (TrackList, error) {
	f.record(fmt.Sprintf("mix %s %d", strings.Join(seeds, ","), n))
	if err := fakeErr(seeds...); err != nil {
		return TrackList{}, err
	}
	return TrackList{ModelSet: "m1", Generation: 7, Tracks: fakeTracks("m", n)}, nil
}

func (f *fakeSimilarity) Path(_ context.Context, from, to string, n int) (TrackList, error) {
	f.record(fmt.Sprintf("path %s %s %d", from, to, n))
	if err := fakeErr(from, to); err != nil {
		return TrackList{}, err
	}
	return TrackList{ModelSet: "m1", Generation: 7, Tracks: fakeTracks("p", n)}, nil
}

func (f *fakeSimilarity) Playlists(context.Context) ([]PlaylistPreview, error) {
	f.record("playlists")
	return []PlaylistPreview{
		{Name: "Mood - happy", File: "Mood - happy", Tracks: fakeTracks("h", 5)},
		{Name: "Mood - sad", File: "Mood - sad", Tracks: fakeTracks("d", 1)},
		{Name: "Mood - calm", File: "Mood - calm"},
	}, nil
}

// simBackend is a Backend that also answers the similarity routes.
type simBackend struct {
	*fakeBackend
	*fakeSimilarity
}

func newSimTest(t *testing.T, opt Options) (*httptest.Server, *fakeSimilarity) {
	t.Helper()
	fs := &fakeSimilarity{}
	s, err := New(simBackend{newFake(), fs}, opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, fs
}

// keysOf is the keys of a track page's tracks, and its paging fields.
func keysOf(t *testing.T, m map[string]any) (keys []string, total, next any) {
	t.Helper()
	tracks, ok := m["tracks"].([]any)
	if !ok {
		t.Fatalf("no tracks list in %v", m)
	}
	for _, x := range tracks {
		keys = append(keys, x.(map[string]any)["key"].(string))
	}
	return keys, m["total"], m["next_offset"]
}

func TestSimilarRoutesAnswerAndPage(t *testing.T) {
	ts, fs := newSimTest(t, Options{})
	for _, c := range []struct {
		path, call, keys string
		total, next      any
	}{
		{"/api/v1/similar?file=/lib/A/B/x.flac", "similar /lib/A/B/x.flac 20", "s0 s1 s2 s3 s4 s5 s6 s7 s8 s9 s10 s11 s12 s13 s14 s15 s16 s17 s18 s19", 20.0, nil},
		{"/api/v1/similar?file=k1&n=5&offset=2&limit=2", "similar k1 5", "s2 s3", 5.0, 4.0},
		{"/api/v1/similar?file=k1&n=5&offset=4&limit=2", "similar k1 5", "s4", 5.0, nil},
		{"/api/v1/similar?file=k1&n=5&offset=9", "similar k1 5", "", 5.0, nil},
		{"/api/v1/mix?seed=a&seed=b&n=3", "mix a,b 3", "m0 m1 m2", 3.0, nil},
		{"/api/v1/mix?seed=a", "mix a 30", "", 30.0, nil},
		{"/api/v1/mix?seed=a&limit=1000&n=1000", "mix a 1000", "", 1000.0, nil},
		{"/api/v1/path?from=a&to=b&n=4&limit=3", "path a b 4", "p0 p1 p2", 4.0, 3.0},
		{"/api/v1/path?from=a&to=b", "path a b 15", "", 15.0, nil},
	} {
		m := jsonOf(t, do(t, ts, "GET", c.path, ""), http.StatusOK)
		keys, total, next := keysOf(t, m)
		if fs.last() != c.call {
			t.Errorf("%s: backend got %q, want %q", c.path, fs.last(), c.call)
		}
		if c.keys != "" && strings.Join(keys, " ") != c.keys {
			t.Errorf("%s: tracks %v, want %s", c.path, keys, c.keys)
		}
		if total != c.total || next != c.next {
			t.Errorf("%s: total %v next_offset %v, want %v %v", c.path, total, next, c.total, c.next)
		}
		if m["model_set"] != "m1" || m["generation"] != 7.0 {
			t.Errorf("%s: model_set %v generation %v", c.path, m["model_set"], m["generation"])
		}
	}
	m := jsonOf(t, do(t, ts, "GET", "/api/v1/similar?file=k1&n=2", ""), http.StatusOK)
	first := m["tracks"].([]any)[0].(map[string]any)
	if first["score"] != 1.0 || first["path"] != "/lib/A/B/s0.flac" || first["title"] != "s0" {
		t.Errorf("first track %v", first)
	}
	m = jsonOf(t, do(t, ts, "GET", "/api/v1/path?from=a&to=b&n=2", ""), http.StatusOK)
	if _, has := m["tracks"].([]any)[0].(map[string]any)["score"]; has {
		t.Errorf("a path's track has a score: %v", m)
	}
}

func TestPlaylistsPreviewPages(t *testing.T) {
	ts, _ := newSimTest(t, Options{})
	m := jsonOf(t, do(t, ts, "GET", "/api/v1/playlists?limit=2", ""), http.StatusOK)
	lists := m["playlists"].([]any)
	if len(lists) != 2 || m["total"] != 3.0 || m["next_offset"] != 2.0 {
		t.Fatalf("first page %v", m)
	}
	if p := lists[0].(map[string]any); p["name"] != "Mood - happy" || p["tracks"] != 5.0 || p["file"] != "Mood - happy" {
		t.Errorf("first playlist %v", p)
	}
	m = jsonOf(t, do(t, ts, "GET", "/api/v1/playlists?offset=2", ""), http.StatusOK)
	if lists := m["playlists"].([]any); len(lists) != 1 || lists[0].(map[string]any)["tracks"] != 0.0 || m["next_offset"] != nil {
		t.Errorf("last page %v", m)
	}
	m = jsonOf(t, do(t, ts, "GET", "/api/v1/playlists?name="+url.QueryEscape("Mood - happy")+"&offset=1&limit=3", ""), http.StatusOK)
	keys, total, next := keysOf(t, m)
	if strings.Join(keys, " ") != "h1 h2 h3" || total != 5.0 || next != 4.0 || m["name"] != "Mood - happy" {
		t.Errorf("one playlist's page: %v", m)
	}
	m = jsonOf(t, do(t, ts, "GET", "/api/v1/playlists?name="+url.QueryEscape("Mood - calm"), ""), http.StatusOK)
	if keys, total, _ := keysOf(t, m); len(keys) != 0 || total != 0.0 {
		t.Errorf("an empty playlist: %v", m)
	}
	wantError(t, do(t, ts, "GET", "/api/v1/playlists?name=nope", ""), http.StatusNotFound, `no playlist named "nope"`)
}

func TestSimilarRoutesRefuseBadInput(t *testing.T) {
	ts, fs := newSimTest(t, Options{})
	many := strings.Repeat("seed=a&", MaxSeeds+1)
	long := strings.Repeat("x", MaxFileArg+1)
	for _, c := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/api/v1/similar", 400, "file must be given once"},
		{"/api/v1/similar?file=a&file=b", 400, "file must be given once"},
		{"/api/v1/similar?file=", 400, "file must be a file's key or path"},
		{"/api/v1/similar?file=a%00b", 400, "without NUL"},
		{"/api/v1/similar?file=" + long, 400, "1 to 4096 bytes"},
		{"/api/v1/similar?file=a&n=0", 400, "n must be one integer from 1 to 1000"},
		{"/api/v1/similar?file=a&n=1001", 400, "n must be one integer from 1 to 1000"},
		{"/api/v1/similar?file=a&n=ten", 400, "n must be one integer"},
		{"/api/v1/similar?file=a&n=3&n=4", 400, "n must be one integer"},
		{"/api/v1/similar?file=a&offset=-1", 400, "offset must be one integer from 0"},
		{"/api/v1/similar?file=a&limit=0", 400, "limit must be one integer from 1 to 1000"},
		{"/api/v1/similar?file=a&limit=1001", 400, "limit must be one integer from 1 to 1000"},
		{"/api/v1/similar?file=missing", 404, "not a file of the library"},
		{"/api/v1/similar?file=outside", 400, "outside the library root"},
		{"/api/v1/similar?file=down", 503, "being built"},
		{"/api/v1/similar?file=broken", 500, "similar failed: internal error"},
		{"/api/v1/mix", 400, "seed must be given 1 to 50 times"},
		{"/" + "api/v1/mix?" + many, 400, "seed must be given 1 to 50 times"},
		{"/api/v1/mix?seed=a&n=1001", 400, "n must be one integer from 1 to 1000"},
		{"/api/v1/mix?seed=a&seed=missing", 404, "not a file of the library"},
		{"/api/v1/path?from=a", 400, "to must be given once"},
		{"/api/v1/path?to=a", 400, "from must be given once"},
		{"/api/v1/path?from=a&to=b&n=1", 400, "n must be one integer from 2 to 1000"},
		{"/api/v1/path?from=a&to=outside", 400, "outside the library root"},
		{"/api/v1/path?from=missing&to=b", 404, "not a file of the library"},
		{"/api/v1/playlists?name=", 400, "name must be given once"},
		{"/api/v1/playlists?name=a&name=b", 400, "name must be given once"},
		{"/api/v1/playlists?limit=x", 400, "limit must be one integer"},
	} {
		r := do(t, ts, "GET", c.path, "")
		wantError(t, r, c.code, c.contains)
		if c.code == 503 && r.header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", c.path)
		}
		if strings.Contains(string(r.body), "secret") {
			t.Errorf("%s: a backend error's text reached the client: %s", c.path, r.body)
		}
	}
	// Parameters are checked before the backend is asked.
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, call := range fs.calls {
		if strings.Contains(call, " 0") || strings.Contains(call, "1001") {
			t.Errorf("backend called with a refused parameter: %s", call)
		}
	}
}

func TestSimilarRoutesWithoutSimilarity(t *testing.T) {
	ts := newTest(t, newFake(), Options{})
	for _, p := range []string{"/api/v1/similar?file=a", "/api/v1/mix?seed=a", "/api/v1/path?from=a&to=b", "/api/v1/playlists"} {
		wantError(t, do(t, ts, "GET", p, ""), http.StatusServiceUnavailable, "similarity is not available")
	}
}

// The similarity routes are reads: open on loopback whatever the token,
// the token elsewhere; on loopback a foreign Host is refused; no method
// but GET (and HEAD) is routed, so nothing there changes state (but POST
// /api/v1/playlists, which saves one: TestSavePlaylist).
func TestSimilarRoutesAccess(t *testing.T) {
	paths := []string{"/api/v1/similar?file=a", "/api/v1/mix?seed=a", "/api/v1/path?from=a&to=b", "/api/v1/playlists"}
	loop, fs := newSimTest(t, Options{Token: testToken})
	loopSrv, err := New(simBackend{newFake(), fs}, Options{Addr: "127.0.0.1:8356", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		jsonOf(t, do(t, loop, "GET", p, ""), http.StatusOK)
		jsonOf(t, do(t, loop, "GET", p, "", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"), http.StatusOK)
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.Host = "rebind.example:8356"
		w := httptest.NewRecorder()
		loopSrv.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusMisdirectedRequest {
			t.Errorf("%s with a foreign Host: %d, want 421", p, w.Code)
		}
		if p == "/api/v1/playlists" {
			continue // POST saves a playlist (TestSavePlaylist)
		}
		r := do(t, loop, "POST", p, testToken)
		wantError(t, r, http.StatusMethodNotAllowed, "not allowed")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || strings.Contains(allow, "POST") {
			t.Errorf("%s: Allow %q", p, allow)
		}
	}
	s, err := New(simBackend{newFake(), fs}, Options{Addr: "0.0.0.0:0", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	lan := httptest.NewServer(s.Handler())
	defer lan.Close()
	for _, p := range paths {
		wantError(t, do(t, lan, "GET", p, ""), http.StatusUnauthorized, "API token")
		wantError(t, do(t, lan, "GET", p, "wrong"), http.StatusUnauthorized, "API token")
		jsonOf(t, do(t, lan, "GET", p, testToken), http.StatusOK)
	}
}
