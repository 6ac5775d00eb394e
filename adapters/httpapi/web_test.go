package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/tags"
)

// lanLib serves a library backend on a non-loopback address with a
// token, where every read needs it.
func lanLib(t *testing.T, b Backend) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(b, Options{Addr: "0.0.0.0:0", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// TestAudioURLPlaysWithoutToken: where a token is required, the audio
// route refuses a request without it, and plays a URL issued by
// GET …/audio-url (with the token) without it, Range requests included,
// for that file only and until it expires.
func TestAudioURLPlaysWithoutToken(t *testing.T) {
	b, _ := newLibBackend(t)
	s, ts := lanLib(t, b)
	wantError(t, do(t, ts, "GET", "/api/v1/files/0001/audio", ""), http.StatusUnauthorized, "API token")
	wantError(t, do(t, ts, "GET", "/api/v1/files/0001/audio-url", ""), http.StatusUnauthorized, "API token")
	wantError(t, do(t, ts, "GET", "/api/v1/files/ffff/audio-url", testToken), http.StatusNotFound, "no such file")
	m := jsonOf(t, do(t, ts, "GET", "/api/v1/files/0001/audio-url", testToken), http.StatusOK)
	u := m["url"].(string)
	if !strings.HasPrefix(u, "/api/v1/files/0001/audio?") || !strings.Contains(u, "sig=") {
		t.Fatalf("url %q", u)
	}
	if exp, err := time.Parse(time.RFC3339, m["expires"].(string)); err != nil || time.Until(exp) > AudioURLTTL || time.Until(exp) < AudioURLTTL-time.Minute {
		t.Fatalf("expires %v (%v)", m["expires"], err)
	}
	r := do(t, ts, "GET", u, "")
	if r.code != http.StatusOK || len(r.body) != 1000 || r.body[0] != '1' {
		t.Fatalf("signed audio: %d, %d bytes", r.code, len(r.body))
	}
	r = do(t, ts, "GET", u, "", "Range", "bytes=10-19")
	if r.code != http.StatusPartialContent || len(r.body) != 10 {
		t.Fatalf("signed range: %d, %d bytes", r.code, len(r.body))
	}
	other := strings.Replace(u, "/0001/", "/0002/", 1)
	wantError(t, do(t, ts, "GET", other, ""), http.StatusUnauthorized, "API token")
	tampered := u[:len(u)-1] + map[bool]string{true: "1", false: "0"}[u[len(u)-1] == '0']
	wantError(t, do(t, ts, "GET", tampered, ""), http.StatusUnauthorized, "API token")
	later := strings.Replace(u, "exp=", "exp=9", 1) // a later expiry under the same signature
	wantError(t, do(t, ts, "GET", later, ""), http.StatusUnauthorized, "API token")
	s.audio.now = func() time.Time { return time.Now().Add(AudioURLTTL + time.Second) }
	wantError(t, do(t, ts, "GET", u, ""), http.StatusUnauthorized, "API token")
	if got := redactQuery(strings.SplitN(u, "?", 2)[1]); strings.Contains(got, m["url"].(string)[strings.Index(u, "sig=")+4:]) {
		t.Errorf("the request log would write the signature: %q", got)
	}
}

// saverBackend is a library backend that saves playlists.
type saverBackend struct {
	*libBackend
	mu    sync.Mutex
	saved []SaveRule
	err   error
}

func (b *saverBackend) SavePlaylist(_ context.Context, r SaveRule) (SavedPlaylist, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return SavedPlaylist{}, b.err
	}
	b.saved = append(b.saved, r)
	return SavedPlaylist{Name: r.Name, File: r.Name, Tracks: 3, Written: []string{r.Name + ".m3u8", r.Name + ".nsp"}}, nil
}

func (b *saverBackend) rules() []SaveRule {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]SaveRule(nil), b.saved...)
}

func postJSON(t *testing.T, ts *httptest.Server, path, token, body string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp{res.StatusCode, res.Header, []byte(b.String())}
}

// TestSavePlaylist: POST /api/v1/playlists hands a checked rule to the
// saver; it obeys the token and the cross-site refusal of every POST,
// takes no path (an unknown field is refused), and a bad rule is 400.
func TestSavePlaylist(t *testing.T) {
	lb, _ := newLibBackend(t)
	b := &saverBackend{libBackend: lb}
	_, ts := lanLib(t, b)
	const rule = `{"name":"Happy rock","mood":"Happy","tier":"regular","genre":"rock","score":"happy_musicnn_mood_happy","min":0.5,"max":1}`
	m := jsonOf(t, postJSON(t, ts, "/api/v1/playlists", testToken, rule), http.StatusOK)
	if m["name"] != "Happy rock" || m["tracks"].(float64) != 3 || len(m["written"].([]any)) != 2 {
		t.Fatalf("answer %v", m)
	}
	got := b.rules()
	if len(got) != 1 || got[0].Mood != "happy" || got[0].Tier != "regular" || got[0].Score != "happy_musicnn_mood_happy" || *got[0].Min != 0.5 {
		t.Fatalf("saved %+v", got)
	}
	wantError(t, postJSON(t, ts, "/api/v1/playlists", "", rule), http.StatusUnauthorized, "API token")
	wantError(t, postJSON(t, ts, "/api/v1/playlists", testToken, rule, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "cross-origin")
	wantError(t, postJSON(t, ts, "/api/v1/playlists", testToken, rule, "Origin", "https://evil.example"), http.StatusForbidden, "cross-origin")
	for body, want := range map[string]string{
		`{"name":"x","mood":"happy","dir":"/etc"}`:    "unknown field",
		`{"name":"../x","mood":"happy"}`:              "must not contain /",
		`{"name":"..","mood":"happy"}`:                "only dots",
		`{"name":"","mood":"happy"}`:                  "name is required",
		`{"name":"all"}`:                              "selects every track",
		`{"name":"x","mood":"happy","tier":"mid"}`:    "tier",
		`{"name":"x","score":"happy","min":0}`:        "score key",
		`{"name":"x","mood":"happy","min":0}`:         "go with score",
		"{\"name\":\"a\\u0007b\",\"mood\":\"happy\"}": "control",
		`not json`: "JSON",
	} {
		wantError(t, postJSON(t, ts, "/api/v1/playlists", testToken, body), http.StatusBadRequest, want)
	}
	if n := len(b.rules()); n != 1 {
		t.Fatalf("%d rules saved, want 1: refused requests must save nothing", n)
	}
	b.err = errors.Join(ErrUnavailable, errors.New("set playlists_dir to save playlists"))
	wantError(t, postJSON(t, ts, "/api/v1/playlists", testToken, rule), http.StatusServiceUnavailable, "playlists_dir")
	_, plain := lanLib(t, lb) // a backend that cannot save
	wantError(t, postJSON(t, plain, "/api/v1/playlists", testToken, rule), http.StatusServiceUnavailable, "cannot save")
}

// calBackend is a library backend that reports a calibration state.
type calBackend struct {
	*libBackend
	st CalibrationState
}

func (b *calBackend) Calibration(context.Context) (CalibrationState, error) { return b.st, nil }

// TestInsightsCalibration: insights says which calibration is in force,
// and says so when none is stored or it is another model set's.
func TestInsightsCalibration(t *testing.T) {
	lb, _ := newLibBackend(t)
	c := &tags.Calibration{Version: "v1", Files: 40, Ranges: map[string]tags.Range{"happy_musicnn_mood_happy": {Low: 0.1, High: 0.8}}}
	for _, tc := range []struct {
		st     CalibrationState
		force  bool
		stored bool
		why    string
	}{
		{CalibrationState{Mode: "none", ModelSet: "v1"}, false, false, "calibration is none"},
		{CalibrationState{Mode: "library", ModelSet: "v1"}, false, false, "no calibration is stored"},
		{CalibrationState{Mode: "library", ModelSet: "v2", Stored: c}, false, true, "another model set"},
		{CalibrationState{Mode: "none", ModelSet: "v1", Stored: c}, false, true, "calibration is none"},
		{CalibrationState{Mode: "library", ModelSet: "v1", Stored: c}, true, true, "scaled"},
	} {
		s, err := New(&calBackend{lb, tc.st}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ts := newServer(t, s)
		cal := jsonOf(t, do(t, ts, "GET", "/api/v1/insights", ""), http.StatusOK)["calibration"].(map[string]any)
		if cal["in_force"] != tc.force || (cal["stored"] != nil) != tc.stored || !strings.Contains(cal["why"].(string), tc.why) {
			t.Errorf("%+v: calibration %v", tc.st, cal)
		}
		if tc.stored {
			st := cal["stored"].(map[string]any)
			r := st["ranges"].(map[string]any)["happy_musicnn_mood_happy"].(map[string]any)
			if st["files"].(float64) != 40 || r["p5"].(float64) != 0.1 || r["p95"].(float64) != 0.8 || st["id"] == "" {
				t.Errorf("stored %v", st)
			}
		}
	}
	ts := newServer(t, mustNew(t, lb))
	if cal := jsonOf(t, do(t, ts, "GET", "/api/v1/insights", ""), http.StatusOK)["calibration"]; cal != nil {
		t.Errorf("a backend without calibration: %v, want null", cal)
	}
}

func mustNew(t *testing.T, b Backend) *Server {
	t.Helper()
	s, err := New(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLibrarySearchByArtist: the search looks in the file's artist, title
// and album (store.FileInfo), and the file's answers carry them.
func TestLibrarySearchByArtist(t *testing.T) {
	_, _, get := newLibTest(t, Options{})
	for _, q := range []string{"KEATING", "lost", "into%20the"} {
		m := jsonOf(t, get("GET", "/api/v1/library?q="+q), http.StatusOK)
		files := m["files"].([]any)
		if m["total"].(float64) != 1 || len(files) != 1 {
			t.Fatalf("q=%s: %v", q, m)
		}
		f := files[0].(map[string]any)
		if f["key"] != "0003" || f["artist"] != "Zoë Keating" || f["title"] != "Lost" || f["album"] != "Into the Trees" {
			t.Fatalf("q=%s: file %v", q, f)
		}
	}
	f := jsonOf(t, get("GET", "/api/v1/files/0003"), http.StatusOK)["file"].(map[string]any)
	if f["artist"] != "Zoë Keating" || f["duration_ms"].(float64) != 201_500 {
		t.Fatalf("file 0003: %v", f)
	}
	if f := jsonOf(t, get("GET", "/api/v1/files/0004"), http.StatusOK)["file"].(map[string]any); f["artist"] != nil || f["duration_ms"] != nil {
		t.Fatalf("a file without info: %v", f)
	}
}
