package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/eventually"
)

// fakeBackend records calls and answers from its fields.
type fakeBackend struct {
	mu        sync.Mutex
	info      Info
	err       error // returned by every method when set
	enabled   []bool
	resets    []string
	limits    []int
	history   []store.HistoryRow
	knownIDs  map[string]bool
	infoCalls int
}

func newFake() *fakeBackend {
	return &fakeBackend{
		info: Info{
			Instance:      "host:1:2",
			Store:         "sqlite:/data/nomarr.db",
			WorkerEnabled: true,
			Workers: []WorkerInfo{
				{Component: "worker:discovery:0", Status: "healthy", Phase: "processing", CurrentJob: "a/b.flac",
					PID: 4242, Restarts: 2, LastFrameAgeMs: 1500, FilesProcessed: 17, Errors: 3,
					ClaimConflicts: 1, AvgProcessingMs: 2500, FramesDropped: 4},
				{Component: "worker:discovery:1", Status: "failed", Restarts: 20, LastFrameAgeMs: -1,
					FailureReason: "lifetime limit", RestartAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			},
			Library: store.Counts{Total: 100, Tagged: 60, Failed: 5, Pending: 33, Claimed: 2},
		},
		history: []store.HistoryRow{
			{At: time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC), Instance: "host:1:2", Component: "worker:discovery:0", Status: "healthy"},
			{At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Instance: "host:1:2", Component: "worker:discovery:0", Status: "pending"},
		},
		knownIDs: map[string]bool{"worker:discovery:0": true, "worker:discovery:1": true},
	}
}

func (f *fakeBackend) Info(ctx context.Context) (Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.infoCalls++
	return f.info, f.err
}

func (f *fakeBackend) SetEnabled(ctx context.Context, enabled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.enabled = append(f.enabled, enabled)
	f.info.WorkerEnabled = enabled
	return nil
}

func (f *fakeBackend) Reset(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if id != "" && !f.knownIDs[id] {
		return fmt.Errorf("reset %q: %w", id, ErrNotFound)
	}
	f.resets = append(f.resets, id)
	return nil
}

func (f *fakeBackend) History(ctx context.Context, limit int) ([]store.HistoryRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits = append(f.limits, limit)
	return f.history, f.err
}

func (f *fakeBackend) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

const testToken = "s3cret-token"

// newTest starts an httptest server on the API handler.
func newTest(t *testing.T, f *fakeBackend, opt Options) *httptest.Server {
	t.Helper()
	s, err := New(f, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

type resp struct {
	code   int
	header http.Header
	body   []byte
}

func do(t *testing.T, ts *httptest.Server, method, path, token string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{res.StatusCode, res.Header, b}
}

// jsonOf checks the status and JSON content type and decodes the body.
func jsonOf(t *testing.T, r resp, code int) map[string]any {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("bad JSON %s: %v", r.body, err)
	}
	return m
}

func wantError(t *testing.T, r resp, code int, contains string) {
	t.Helper()
	m := jsonOf(t, r, code)
	msg, _ := m["error"].(string)
	if msg == "" || !strings.Contains(msg, contains) {
		t.Fatalf("error %q, want one containing %q", msg, contains)
	}
}

func TestNewRefusesNonLoopbackWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8356", ":8356", "192.168.1.10:80", "[::]:8356", "nas.local:8356", "10.0.0.1:0"} {
		_, err := New(newFake(), Options{Addr: addr})
		if err == nil || !strings.Contains(err.Error(), "api_token") {
			t.Errorf("%s: err = %v, want a refusal naming api_token", addr, err)
		}
		if _, err := New(newFake(), Options{Addr: addr, Token: testToken}); err != nil {
			t.Errorf("%s with token: %v", addr, err)
		}
	}
}

func TestNewLoopbackWithoutToken(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1:8356", "127.0.0.2:1", "[::1]:8356", "localhost:8356", "LOCALHOST:0"} {
		s, err := New(newFake(), Options{Addr: addr})
		if err != nil {
			t.Errorf("%q: %v", addr, err)
			continue
		}
		if !s.loopback {
			t.Errorf("%q: not seen as loopback", addr)
		}
	}
	s, _ := New(newFake(), Options{})
	if s.addr != DefaultAddr {
		t.Errorf("default addr %q", s.addr)
	}
}

func TestNewBadOptions(t *testing.T) {
	if _, err := New(newFake(), Options{Addr: "no-port"}); err == nil {
		t.Error("address without port accepted")
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("nil backend accepted")
	}
	if _, err := New(newFake(), Options{Token: " padded "}); err == nil || !strings.Contains(err.Error(), "api_token") {
		t.Errorf("padded token: %v", err)
	}
}

func TestInfo(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{Version: "v1.2.3"})
	r := do(t, ts, "GET", "/api/v1/info", "")
	m := jsonOf(t, r, 200)
	if m["version"] != "v1.2.3" || m["instance"] != "host:1:2" || m["worker_enabled"] != true {
		t.Errorf("info %s", r.body)
	}
	lib := m["library"].(map[string]any)
	for k, v := range map[string]float64{"total": 100, "tagged": 60, "failed": 5, "pending": 33, "claimed": 2, "invalid": 2} {
		if lib[k] != v {
			t.Errorf("library.%s = %v, want %v", k, lib[k], v)
		}
	}
	ws := m["workers"].([]any)
	if len(ws) != 2 {
		t.Fatalf("workers %v", ws)
	}
	w0, w1 := ws[0].(map[string]any), ws[1].(map[string]any)
	if w0["component"] != "worker:discovery:0" || w0["current_job"] != "a/b.flac" || w0["pid"] != 4242.0 ||
		w0["last_frame_age_ms"] != 1500.0 || w0["avg_processing_ms"] != 2500.0 {
		t.Errorf("worker 0: %v", w0)
	}
	if _, ok := w0["restart_at"]; ok {
		t.Errorf("zero restart_at not omitted: %v", w0)
	}
	if w1["restart_at"] != "2026-01-02T03:04:05Z" || w1["last_frame_age_ms"] != -1.0 || w1["failure_reason"] != "lifetime limit" {
		t.Errorf("worker 1: %v", w1)
	}

	// The wire form decodes back into Info (case-insensitive keys).
	var back Info
	if err := json.Unmarshal(r.body, &back); err != nil {
		t.Fatal(err)
	}
	want := f.info
	want.Version = "v1.2.3"
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Errorf("round trip:\n%v\n%v", back, want)
	}

	// The backend's own version wins; no workers is [] not null.
	f.mu.Lock()
	f.info.Version, f.info.Workers = "backend-v", nil
	f.mu.Unlock()
	m = jsonOf(t, do(t, ts, "GET", "/api/v1/info", ""), 200)
	if m["version"] != "backend-v" {
		t.Errorf("version %v", m["version"])
	}
	if ws, ok := m["workers"].([]any); !ok || len(ws) != 0 {
		t.Errorf("workers %#v, want []", m["workers"])
	}
}

func TestHEADInfo(t *testing.T) {
	ts := newTest(t, newFake(), Options{})
	if r := do(t, ts, "HEAD", "/api/v1/info", ""); r.code != 200 {
		t.Errorf("HEAD: %d", r.code)
	}
}

func TestBackendErrors(t *testing.T) {
	var logs bytes.Buffer
	f := newFake()
	ts := newTest(t, f, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	f.setErr(errors.New("store exploded: arangodb://root:pw@db"))
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/info"},
		{"GET", "/api/v1/health/history"},
		{"POST", "/api/v1/workers/pause"},
		{"POST", "/api/v1/workers/resume"},
		{"POST", "/api/v1/workers/reset"},
		{"POST", "/api/v1/workers/worker:discovery:0/reset"},
	} {
		r := do(t, ts, c.method, c.path, "")
		wantError(t, r, 500, "internal error")
		if bytes.Contains(r.body, []byte("pw@")) {
			t.Errorf("%s %s leaked the backend error: %s", c.method, c.path, r.body)
		}
	}
	if !strings.Contains(logs.String(), "store exploded") {
		t.Errorf("backend error not logged: %s", logs.String())
	}

	f.setErr(fmt.Errorf("store down: %w", ErrUnavailable))
	wantError(t, do(t, ts, "GET", "/api/v1/info", ""), 503, "store down")
	wantError(t, do(t, ts, "POST", "/api/v1/workers/pause", ""), 503, "store down")
}

func TestPauseResume(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	if m := jsonOf(t, do(t, ts, "POST", "/api/v1/workers/pause", ""), 200); m["worker_enabled"] != false {
		t.Errorf("pause: %v", m)
	}
	if m := jsonOf(t, do(t, ts, "POST", "/api/v1/workers/resume", ""), 200); m["worker_enabled"] != true {
		t.Errorf("resume: %v", m)
	}
	if fmt.Sprint(f.enabled) != "[false true]" {
		t.Errorf("SetEnabled calls %v", f.enabled)
	}
}

func TestReset(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	if m := jsonOf(t, do(t, ts, "POST", "/api/v1/workers/reset", ""), 200); m["reset"] != "failed" {
		t.Errorf("reset all: %v", m)
	}
	if m := jsonOf(t, do(t, ts, "POST", "/api/v1/workers/worker:discovery:1/reset", ""), 200); m["reset"] != "worker:discovery:1" {
		t.Errorf("reset one: %v", m)
	}
	// Escaped ids are decoded.
	if m := jsonOf(t, do(t, ts, "POST", "/api/v1/workers/worker%3Adiscovery%3A0/reset", ""), 200); m["reset"] != "worker:discovery:0" {
		t.Errorf("reset escaped: %v", m)
	}
	wantError(t, do(t, ts, "POST", "/api/v1/workers/worker:nope:9/reset", ""), 404, "worker:nope:9")
	if fmt.Sprintf("%q", f.resets) != `["" "worker:discovery:1" "worker:discovery:0"]` {
		t.Errorf("Reset calls %q", f.resets)
	}
}

func TestHistory(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	m := jsonOf(t, do(t, ts, "GET", "/api/v1/health/history", ""), 200)
	rows := m["history"].([]any)
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	r0 := rows[0].(map[string]any)
	if r0["at"] != "2026-01-01T00:00:30Z" || r0["instance"] != "host:1:2" ||
		r0["component"] != "worker:discovery:0" || r0["status"] != "healthy" {
		t.Errorf("row 0: %v", r0)
	}
	jsonOf(t, do(t, ts, "GET", "/api/v1/health/history?limit=1", ""), 200)
	jsonOf(t, do(t, ts, "GET", "/api/v1/health/history?limit=10000", ""), 200)
	if fmt.Sprint(f.limits) != "[100 1 10000]" {
		t.Errorf("limits %v", f.limits)
	}
	// A backend that returns too much is cut to limit.
	m = jsonOf(t, do(t, ts, "GET", "/api/v1/health/history?limit=1", ""), 200)
	if n := len(m["history"].([]any)); n != 1 {
		t.Errorf("%d rows for limit=1", n)
	}

	for _, bad := range []string{"0", "-1", "10001", "abc", "", "1.5", "99999999999999999999"} {
		wantError(t, do(t, ts, "GET", "/api/v1/health/history?limit="+bad, ""), 400, "limit")
	}

	// No rows: [] not null.
	f.mu.Lock()
	f.history = nil
	f.mu.Unlock()
	r := do(t, ts, "GET", "/api/v1/health/history", "")
	if !bytes.Contains(r.body, []byte(`"history":[]`)) {
		t.Errorf("empty history: %s", r.body)
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	ts := newTest(t, newFake(), Options{})
	for _, p := range []string{"/nope", "/api/v1", "/api/v1/infos", "/api/v2/info", "/index.html", "/api/v1/workers/a/b/reset"} {
		wantError(t, do(t, ts, "GET", p, ""), 404, "not found")
	}
	wantError(t, do(t, ts, "POST", "/nope", ""), 404, "not found")
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/api/v1/info", "GET, HEAD"},
		{"DELETE", "/api/v1/info", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
		{"PUT", "/", "GET, HEAD"},
		{"GET", "/api/v1/workers/pause", "POST"},
		{"GET", "/api/v1/workers/reset", "POST"},
		{"GET", "/api/v1/workers/worker:discovery:0/reset", "POST"},
		{"POST", "/api/v1/health/history", "GET, HEAD"},
	} {
		r := do(t, ts, c.method, c.path, "")
		wantError(t, r, 405, "not allowed")
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}

func TestTokenOnLoopback(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{Token: testToken})
	// Reads are open on loopback even with a token.
	for _, p := range []string{"/", "/api/v1/info", "/api/v1/health/history", "/metrics"} {
		if r := do(t, ts, "GET", p, ""); r.code != 200 {
			t.Errorf("GET %s without token: %d", p, r.code)
		}
	}
	admin := []string{"/api/v1/workers/pause", "/api/v1/workers/resume", "/api/v1/workers/reset", "/api/v1/workers/worker:discovery:0/reset"}
	for _, p := range admin {
		r := do(t, ts, "POST", p, "")
		wantError(t, r, 401, "token")
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("POST %s: no WWW-Authenticate", p)
		}
		wantError(t, do(t, ts, "POST", p, "wrong"), 401, "token")
		wantError(t, do(t, ts, "POST", p, testToken+"x"), 401, "token")
		wantError(t, do(t, ts, "POST", p, "", "Authorization", "Basic "+testToken), 401, "token")
		wantError(t, do(t, ts, "POST", p, "", "Authorization", testToken), 401, "token")
		jsonOf(t, do(t, ts, "POST", p, testToken), 200)
	}
	// The scheme is case-insensitive.
	jsonOf(t, do(t, ts, "POST", admin[0], "", "Authorization", "bearer "+testToken), 200)
	if len(f.enabled)+len(f.resets) != len(admin)+1 {
		t.Errorf("backend saw %d admin calls, want %d", len(f.enabled)+len(f.resets), len(admin)+1)
	}
}

func TestNoTokenOnLoopback(t *testing.T) {
	ts := newTest(t, newFake(), Options{})
	jsonOf(t, do(t, ts, "POST", "/api/v1/workers/pause", ""), 200)
	// A token sent to a server without one is ignored.
	jsonOf(t, do(t, ts, "POST", "/api/v1/workers/resume", "anything"), 200)
}

func TestTokenOffLoopback(t *testing.T) {
	f := newFake()
	// Handler only: New accepts the address, nothing listens on it.
	ts := newTest(t, f, Options{Addr: "0.0.0.0:8356", Token: testToken})
	for _, p := range []string{"/api/v1/info", "/api/v1/health/history", "/metrics"} {
		r := do(t, ts, "GET", p, "")
		wantError(t, r, 401, "token")
		wantError(t, do(t, ts, "GET", p, "wrong"), 401, "token")
		if r := do(t, ts, "GET", p, testToken); r.code != 200 {
			t.Errorf("GET %s with token: %d %s", p, r.code, r.body)
		}
	}
	// The dashboard page holds no data and stays open.
	if r := do(t, ts, "GET", "/", ""); r.code != 200 {
		t.Errorf("dashboard: %d", r.code)
	}
	wantError(t, do(t, ts, "POST", "/api/v1/workers/pause", ""), 401, "token")
	jsonOf(t, do(t, ts, "POST", "/api/v1/workers/pause", testToken), 200)
	// Unknown routes are 404 whatever the token.
	wantError(t, do(t, ts, "GET", "/nope", ""), 404, "not found")
}

func TestCrossOriginPOSTRefused(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	wantError(t, do(t, ts, "POST", "/api/v1/workers/pause", "", "Sec-Fetch-Site", "cross-site"), 403, "cross-origin")
	wantError(t, do(t, ts, "POST", "/api/v1/workers/pause", "", "Origin", "https://evil.example"), 403, "cross-origin")
	if len(f.enabled) != 0 {
		t.Errorf("cross-origin POST reached the backend: %v", f.enabled)
	}
	jsonOf(t, do(t, ts, "POST", "/api/v1/workers/pause", "", "Sec-Fetch-Site", "same-origin"), 200)
	// Cross-origin reads are harmless (the browser hides the answer) and allowed.
	jsonOf(t, do(t, ts, "GET", "/api/v1/info", "", "Sec-Fetch-Site", "cross-site"), 200)
}

func TestRequestLogNeverHasToken(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	h := slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug})
	ts := newTest(t, newFake(), Options{Token: testToken, Logger: slog.New(h)})
	do(t, ts, "POST", "/api/v1/workers/pause", testToken)
	do(t, ts, "POST", "/api/v1/workers/resume", "wrong-"+testToken)
	do(t, ts, "GET", "/api/v1/health/history?limit=5", testToken)
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if strings.Contains(out, testToken) || strings.Contains(out, "Bearer") || strings.Contains(out, "Authorization") {
		t.Errorf("token leaked into the log:\n%s", out)
	}
	for _, s := range []string{`"msg":"http request"`, `"path":"/api/v1/workers/pause"`, `"status":401`, `"query":"limit=5"`, `"level":"DEBUG"`} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %s:\n%s", s, out)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestListenAndServe(t *testing.T) {
	s, err := New(newFake(), Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != "" {
		t.Errorf("Addr before listening: %q", s.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx) }()

	// Nothing announces the bound socket but Addr: it is polled.
	var addr string
	eventually.True(t, 5*time.Second, "ListenAndServe to bind its socket", func() bool { addr = s.Addr(); return addr != "" })
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr %q", addr)
	}
	res, err := http.Get("http://" + addr + "/api/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("GET info: %d", res.StatusCode)
	}
	if err := s.ListenAndServe(ctx); err == nil {
		t.Error("second ListenAndServe accepted")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	case <-time.After(ShutdownTimeout + 2*time.Second):
		t.Fatal("no shutdown after ctx cancel")
	}
	if _, err := http.Get("http://" + addr + "/api/v1/info"); err == nil {
		t.Error("still serving after shutdown")
	}
}

func TestListenError(t *testing.T) {
	s, err := New(newFake(), Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	go s.ListenAndServe(ctx)
	// A second server on the same port cannot listen.
	s2, err := New(newFake(), Options{Addr: s.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.ListenAndServe(ctx); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("busy port: %v", err)
	}
}

// model_sets: left out without a record; with records, each host's
// version, age and lapse in UTC, and who holds the re-tagging back until
// when, left out when nobody does.
func TestInfoModelSets(t *testing.T) {
	if ms := NewModelSetsInfo(inventory.ModelSetReport{Node: "n1"}); ms != nil {
		t.Errorf("no record: %+v, want nil", ms)
	}
	f := newFake()
	ts := newTest(t, f, Options{})
	if m := jsonOf(t, do(t, ts, "GET", "/api/v1/info", ""), 200); m["model_sets"] != nil {
		t.Errorf("model_sets without a record: %v", m["model_sets"])
	}
	now := time.Date(2026, 11, 22, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	sets := inventory.ModelSets{}.Record("n1", "0123456789ab", now.Add(-time.Minute)).Record("n2", "fedcba987654", now.Add(-50*time.Minute))
	f.mu.Lock()
	f.info.ModelSets = NewModelSetsInfo(sets.Report("n1", now))
	f.mu.Unlock()
	m := jsonOf(t, do(t, ts, "GET", "/api/v1/info", ""), 200)
	ms, _ := m["model_sets"].(map[string]any)
	hosts, _ := ms["hosts"].([]any)
	if ms["node"] != "n1" || ms["version"] != "0123456789ab" || ms["held_back"] != true || fmt.Sprint(ms["held_by"]) != "[n2]" ||
		ms["held_until"] != "2026-11-22T13:10:00Z" || len(hosts) != 2 {
		t.Fatalf("model_sets %v", m["model_sets"])
	}
	h := hosts[1].(map[string]any)
	want := map[string]any{"node": "n2", "version": "fedcba987654", "recorded_at": "2026-11-22T11:10:00Z", "age_ms": 3e6,
		"counts": true, "lapses_at": "2026-11-22T13:10:00Z", "renewing": false}
	if len(h) != len(want) {
		t.Errorf("host %v, want %v", h, want)
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("hosts[1].%s = %v, want %v", k, h[k], v)
		}
	}
	f.mu.Lock()
	f.info.ModelSets = NewModelSetsInfo(inventory.ModelSets{"n1": sets["n1"]}.Report("n1", now))
	f.mu.Unlock()
	ms = jsonOf(t, do(t, ts, "GET", "/api/v1/info", ""), 200)["model_sets"].(map[string]any)
	if _, ok := ms["held_by"]; ok || ms["held_back"] != false {
		t.Errorf("one host: %v; want held_back false, no held_by", ms)
	}
	if _, ok := ms["held_until"]; ok {
		t.Errorf("one host: %v; want no held_until", ms)
	}
}
