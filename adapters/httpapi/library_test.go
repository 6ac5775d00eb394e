package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/storetest"
	"github.com/nomarr/nomarr/core/store"
)

// libBackend is a fake Backend with a library: a memstore holding tagged
// files whose paths are real files in dir.
type libBackend struct {
	*fakeBackend
	st store.Store
}

func (b *libBackend) Library() LibraryStore { return b.st }

func newLibBackend(t *testing.T) (*libBackend, string) {
	t.Helper()
	dir := t.TempDir()
	st := storetest.Locked(memstore.New(1))
	ctx := context.Background()
	var files []store.File
	for i := range 30 {
		p := filepath.Join(dir, fmt.Sprintf("Artist %d - Song %02d.mp3", i%3, i))
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprint(i%10), 1000)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, store.File{Key: fmt.Sprintf("%04x", i), Path: p, Size: 1000, NeedsTagging: true, IsValid: true})
	}
	if _, err := st.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, f := range files[:20] {
		if _, err := st.Claim(ctx, store.Claim{FileKey: f.Key, WorkerID: "i/w", ClaimedAt: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		mood := map[bool]string{true: "happy", false: "sad"}[i%2 == 0]
		tags := map[string]string{"happy_musicnn_mood_happy": fmt.Sprintf("%.2f", float64(i)/20), "not_happy_musicnn_mood_happy": "0.5",
			"mood-loose": mood, "mood-regular": mood, "mood-strict": "", "top_tags": "rock; female vocalists"}
		if err := st.Complete(ctx, store.Ref{FileKey: f.Key, WorkerID: "i/w"}, store.Completion{Tags: tags, Version: "v1", At: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutFileInfo(ctx, files[3].Key, store.FileInfo{Artist: "Zoë Keating", Title: "Lost", Album: "Into the Trees", DurationMs: 201_500}); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine(ctx, files[20].Key, "decode: bad frame"); err != nil {
		t.Fatal(err)
	}
	return &libBackend{fakeBackend: newFake(), st: st}, dir
}

func newLibTest(t *testing.T, opt Options) (*libBackend, string, func(method, path string, hdr ...string) resp) {
	b, dir := newLibBackend(t)
	s, err := New(b, opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, s)
	return b, dir, func(method, path string, hdr ...string) resp { return do(t, ts, method, path, "", hdr...) }
}

func TestLibraryPage(t *testing.T) {
	_, _, get := newLibTest(t, Options{})
	m := jsonOf(t, get("GET", "/api/v1/library?mood=happy&sort=happy_musicnn_mood_happy&order=desc&limit=3"), 200)
	if m["total"].(float64) != 10 || m["limit"].(float64) != 3 {
		t.Fatalf("happy files: %v", m)
	}
	files := m["files"].([]any)
	first := files[0].(map[string]any)
	if first["key"] != "0012" || first["status"] != "tagged" || first["scores"].(map[string]any)["happy_musicnn_mood_happy"].(float64) != 0.9 {
		t.Errorf("first happy file, by score descending: %v", first)
	}
	if g := first["genres"].([]any); len(g) != 1 || g[0] != "Rock" {
		t.Errorf("genres %v, want Rock only (female vocalists is not a genre)", g)
	}
	for q, want := range map[string]float64{
		"q=artist%201": 10, "status=failed": 1, "status=pending": 9, "genre=Rock": 20, "score=happy_musicnn_mood_happy:0.5:1": 10,
		"q=song%2007&status=tagged": 1, "status=missing": 0,
	} {
		if got := jsonOf(t, get("GET", "/api/v1/library?"+q), 200)["total"].(float64); got != want {
			t.Errorf("%s: total %v, want %v", q, got, want)
		}
	}
	for _, q := range []string{"status=gone", "tier=x", "sort=nope", "order=up", "limit=9999", "offset=-1", "score=x:0:1",
		"score=happy_musicnn_mood_happy:0.9:0.1"} {
		wantError(t, get("GET", "/api/v1/library?"+q), 400, "")
	}
}

func TestFileAndAudio(t *testing.T) {
	_, dir, get := newLibTest(t, Options{})
	m := jsonOf(t, get("GET", "/api/v1/files/0014"), 200)
	f := m["file"].(map[string]any)
	if f["status"] != "failed" || f["last_error"] != "decode: bad frame" || m["tags"].(map[string]any) == nil {
		t.Errorf("failed file: %v", m)
	}
	wantError(t, get("GET", "/api/v1/files/ffff"), 404, "no such file")
	r := get("GET", "/api/v1/files/0003/audio", "Range", "bytes=10-19")
	if r.code != http.StatusPartialContent || string(r.body) != strings.Repeat("3", 10) || r.header.Get("Content-Type") != "audio/mpeg" {
		t.Errorf("range: %d %q %q", r.code, r.body, r.header.Get("Content-Type"))
	}
	if r := get("GET", "/api/v1/files/0003/audio"); r.code != 200 || len(r.body) != 1000 || r.header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("whole file: %d %d bytes", r.code, len(r.body))
	}
	// A path never comes from the request: a traversal names no key.
	for _, p := range []string{"/api/v1/files/..%2F..%2Fetc%2Fpasswd/audio", "/api/v1/files/" + filepath.Base(dir) + "/audio"} {
		if r := get("GET", p); r.code == 200 {
			t.Errorf("GET %s: %d", p, r.code)
		}
	}
	// A known file gone from the disk is 404, not an error page.
	if err := os.Remove(filepath.Join(dir, "Artist 1 - Song 04.mp3")); err != nil {
		t.Fatal(err)
	}
	wantError(t, get("GET", "/api/v1/files/0004/audio"), 404, "not readable")
}

func TestInsights(t *testing.T) {
	_, _, get := newLibTest(t, Options{})
	m := jsonOf(t, get("GET", "/api/v1/insights"), 200)
	if m["files"].(float64) != 20 || m["bins"].(float64) != store.HistogramBins {
		t.Fatalf("insights %v", m)
	}
	h := m["histograms"].(map[string]any)
	if len(h) != 1 || len(h["happy_musicnn_mood_happy"].([]any)) != store.HistogramBins {
		t.Errorf("histograms %v", h)
	}
	if g := m["genres"].(map[string]any); g["Rock"].(float64) != 20 || len(g) != 1 {
		t.Errorf("genres %v", g)
	}
	if moods := m["moods"].(map[string]any)["loose"].(map[string]any); moods["happy"].(float64) != 10 || moods["sad"].(float64) != 10 {
		t.Errorf("moods %v", moods)
	}
}

// TestLibraryNeedsLibraryBackend: a backend without a library answers 503.
func TestLibraryNeedsLibraryBackend(t *testing.T) {
	ts := newTest(t, newFake(), Options{})
	for _, p := range []string{"/api/v1/library", "/api/v1/files/0001", "/api/v1/files/0001/audio", "/api/v1/insights"} {
		wantError(t, do(t, ts, "GET", p, ""), 503, "no library")
	}
}

// TestLibraryNeedsToken: off loopback the library's routes need the
// token, like every read.
func TestLibraryNeedsToken(t *testing.T) {
	b, _ := newLibBackend(t)
	s, err := New(b, Options{Addr: "0.0.0.0:0", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, s)
	for _, p := range []string{"/api/v1/library", "/api/v1/files/0001", "/api/v1/files/0001/audio", "/api/v1/insights"} {
		wantError(t, do(t, ts, "GET", p, ""), 401, "token")
		if r := do(t, ts, "GET", p, testToken); r.code != 200 {
			t.Errorf("GET %s with the token: %d", p, r.code)
		}
	}
}

func TestPages(t *testing.T) {
	ts := newTest(t, newFake(), Options{})
	for _, p := range []string{"/", "/library", "/track?key=x", "/insights", "/playlists", "/health"} {
		r := do(t, ts, "GET", p, "")
		if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %q", p, r.code, r.header.Get("Content-Type"))
		}
		body := string(r.body)
		if !strings.Contains(body, `src="/ui/app.js"`) || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("GET %s: not the shell, or it names another site", p)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("CSP %q", csp)
		}
	}
	for _, name := range []string{"app.js", "api.js", "library.js", "track.js", "insights.js", "health.js", "playlists.js", "charts.js", "style.css"} {
		r := do(t, ts, "GET", "/ui/"+name, "")
		if r.code != 200 {
			t.Fatalf("GET /ui/%s: %d", name, r.code)
		}
		if strings.HasSuffix(name, ".js") && !strings.HasPrefix(r.header.Get("Content-Type"), "text/javascript") {
			t.Errorf("%s served as %q: a module must be JavaScript", name, r.header.Get("Content-Type"))
		}
		body := strings.ReplaceAll(string(r.body), `"http://www.w3.org/2000/svg"`, "") // a name, not a site
		for _, bad := range []string{"http://", "https://", ".innerHTML", "eval("} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q", name, bad)
			}
		}
	}
	for _, p := range []string{"/ui/", "/ui/nope.js", "/ui/..%2Fui.go", "/ui/.hidden"} {
		if r := do(t, ts, "GET", p, ""); r.code != 404 {
			t.Errorf("GET %s: %d, want 404", p, r.code)
		}
	}
	// The health page keeps the dashboard's data.
	body := string(do(t, ts, "GET", "/ui/health.js", "").body)
	for _, s := range []string{"/api/v1/info", "setInterval(tick, 2000)", "held_by", "x.kills", "d.files_quarantined", "d.clock_skew",
		"/api/v1/workers/pause", "/api/v1/workers/resume", "/api/v1/workers/reset", "/api/v1/health/history"} {
		if !strings.Contains(body, s) {
			t.Errorf("health page lacks %q", s)
		}
	}
}

// TestEveryPOSTRefusedCrossSite: no state-changing route answers a
// request another site's page sends, with or without a token.
func TestEveryPOSTRefusedCrossSite(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	for _, p := range []string{"/api/v1/workers/pause", "/api/v1/workers/resume", "/api/v1/workers/reset", "/api/v1/workers/w0/reset"} {
		for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "http://evil.example"},
			{"Origin", "http://127.0.0.1.evil.example:8356"}} {
			wantError(t, do(t, ts, "POST", p, "", h...), 403, "cross-origin")
		}
	}
	if len(f.enabled) != 0 {
		t.Errorf("a cross-site POST reached the backend: %v", f.enabled)
	}
}

func newServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}
