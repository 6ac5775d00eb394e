// Package browser drives the pages of `nomarr serve` in Debian's headless
// chromium (github.com/chromedp/chromedp): a real binary, built here, on
// a store filled with a tagged library. Each page is loaded and used as a
// person would (search, filters, the track's scores, pause and resume on
// the Health page), and a screenshot of each is written to
// $NOMARR_TEST_SCREENSHOTS (default: a temporary folder, logged).
//
// Without chromium the tests skip, saying how to run them, unless
// NOMARR_TEST_REQUIRE_BROWSER is set: then they fail (CI installs chromium with
// scripts/deps.sh --test).
package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// chromium finds the browser, or skips (fails with NOMARR_TEST_REQUIRE_BROWSER).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("NOMARR_TEST_REQUIRE_BROWSER") != "" {
		t.Fatal("chromium not found and NOMARR_TEST_REQUIRE_BROWSER is set: install it (scripts/deps.sh --test, or apt-get install chromium)")
	}
	t.Skip("chromium not found: the browser tests need Debian's chromium; run scripts/deps.sh --test " +
		"(or apt-get install chromium), then go test ./test/browser")
	return ""
}

// moods and genres of the demo library, by index.
var (
	moods  = []string{"happy", "sad", "relaxed", "party", "aggressive"}
	genres = []string{"rock", "pop", "jazz", "electronic", "folk"}
)

// fillStore writes a library of n files into a new SQLite store: most
// tagged with scores and mood lists, a few failed, none pending (the
// workers of serve have nothing to do).
func fillStore(t *testing.T, db string, n int) {
	ctx := context.Background()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files := make([]store.File, n)
	for i := range files {
		files[i] = store.File{Key: fmt.Sprintf("%08x", i*2654435761%(1<<32)), Size: 1000, NeedsTagging: true, IsValid: true,
			Path: fmt.Sprintf("/music/%s Band %d/Album %d/%02d %s Song.flac", strings.ToUpper(genres[i%5][:1])+genres[i%5][1:], i%7, i%3, i, moods[i%5])}
	}
	if _, err := st.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Hour)
	for i, f := range files {
		at := now.Add(time.Duration(i) * time.Second)
		if _, err := st.Claim(ctx, store.Claim{FileKey: f.Key, WorkerID: "demo/w", ClaimedAt: at, LeaseUntil: at.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		ref := store.Ref{FileKey: f.Key, WorkerID: "demo/w"}
		if i%10 == 9 {
			if err := st.Release(ctx, ref, &store.FileUpdate{Attempts: 3, Failed: true, LastError: "decode: invalid frame header"}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		x := func(k int) float64 { return float64((i*37+k*53)%100) / 100 }
		tags := map[string]string{"nom_version": "demo"}
		var loose, strict []string
		for k, m := range moods {
			head := map[string]string{"happy": "mood_happy", "sad": "mood_sad", "relaxed": "mood_relaxed", "party": "mood_party", "aggressive": "mood_aggressive"}[m]
			v := x(k)
			if m == moods[i%5] {
				v = 0.75 + float64(i%20)/100
			}
			tags[m+"_musicnn_"+head] = fmt.Sprintf("%.4f", v)
			tags["not_"+m+"_musicnn_"+head] = fmt.Sprintf("%.4f", 1-v)
			if v >= 0.5 {
				loose = append(loose, m)
			}
			if v >= 0.7 {
				strict = append(strict, m)
			}
		}
		tags["danceable_musicnn_danceability"] = fmt.Sprintf("%.4f", x(7))
		tags["mood-loose"], tags["mood-regular"], tags["mood-strict"] = strings.Join(loose, "; "), strings.Join(strict, "; "), strings.Join(strict, "; ")
		tags["top_tags"] = genres[i%5] + "; " + genres[(i+2)%5]
		if err := st.Complete(ctx, ref, store.Completion{Tags: tags, Version: "demo", At: at}); err != nil {
			t.Fatal(err)
		}
	}
}

// serve builds the binary and runs `nomarr serve` on db; it returns the
// base URL once the API answers.
func serve(t *testing.T, db string) string {
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "nomarr")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nomarr")
	build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dataDir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--http-addr", addr, "--db", "sqlite:"+db, "--analyzer", "noop", "--data-dir", dataDir, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	for _, e := range os.Environ() { // the test's own settings are not serve's
		if !strings.HasPrefix(e, "NOMARR_TEST_SCREENSHOTS=") && !strings.HasPrefix(e, "NOMARR_TEST_REQUIRE_BROWSER=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err := http.Get(base + "/api/v1/info"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("nomarr serve did not answer within 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shots is the screenshot folder.
func shots(t *testing.T) string {
	dir := os.Getenv("NOMARR_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func TestPages(t *testing.T) {
	exe := chromium(t)
	db := filepath.Join(t.TempDir(), "nomarr.db")
	fillStore(t, db, 120)
	base := serve(t, db)
	dir := shots(t)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	run := func(what string, acts ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, acts...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	open := func(path, page string) {
		t.Helper()
		run("open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(`body[data-ready="`+page+`"]`, chromedp.ByQuery))
	}
	shot := func(name string) {
		t.Helper()
		var png []byte
		run("screenshot "+name, chromedp.CaptureScreenshot(&png)) // the viewport, PNG
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	count := func() string {
		var s string
		run("read the count", chromedp.Text("#count", &s, chromedp.ByQuery))
		return s
	}
	rows := func() int {
		var n int
		run("count rows", chromedp.Evaluate(`document.querySelectorAll("#files tbody tr[data-key]").length`, &n))
		return n
	}
	var errText string

	// Library: the first page, then search, then a mood filter.
	open("/library", "library")
	if got := count(); got != "1–50 of 120" || rows() != 50 {
		t.Fatalf("library: %q, %d rows", got, rows())
	}
	shot("library")
	run("search", chromedp.SendKeys(`input[name="q"]`, "jazz band 3", chromedp.ByQuery), chromedp.Submit(`#filters`, chromedp.ByQuery),
		chromedp.WaitVisible(`body[data-ready="library"]`, chromedp.ByQuery))
	open("/library?q=jazz+band+3", "library")
	if n := rows(); n == 0 || n >= 50 {
		t.Fatalf("search for jazz band 3: %d rows", n)
	}
	run("filter", chromedp.Evaluate(`(() => { const f = document.getElementById("filters");
		f.q.value = ""; f.mood.value = "sad"; f.status.value = "tagged"; f.requestSubmit(); return true })()`, nil),
		chromedp.Sleep(500*time.Millisecond), chromedp.WaitVisible(`body[data-ready="library"]`, chromedp.ByQuery))
	var loc string
	run("location", chromedp.Location(&loc))
	if !strings.Contains(loc, "mood=sad") || !strings.Contains(loc, "status=tagged") {
		t.Fatalf("filter form went to %s", loc)
	}
	filtered := count()
	if filtered == "1–50 of 120" || strings.HasPrefix(filtered, "0 ") {
		t.Fatalf("mood filter: %q", filtered)
	}
	var status string
	run("status column", chromedp.Evaluate(`[...document.querySelectorAll("#files tbody td:nth-child(2)")].map(td => td.textContent).join(",")`, &status))
	if strings.Contains(status, "failed") {
		t.Errorf("tagged filter shows failed files: %s", status)
	}
	run("sort by score", chromedp.Click(`#files thead th:nth-child(5)`, chromedp.ByQuery), chromedp.Sleep(500*time.Millisecond),
		chromedp.WaitVisible(`body[data-ready="library"]`, chromedp.ByQuery), chromedp.Location(&loc))
	if !strings.Contains(loc, "sort=") {
		t.Errorf("clicking the score header went to %s", loc)
	}

	// Track: scores as bars, the tags, similar tracks (none yet).
	var href string
	run("first track", chromedp.AttributeValue(`#files tbody tr a`, "href", &href, nil, chromedp.ByQuery))
	open(href, "track")
	var bars int
	run("bars", chromedp.Evaluate(`document.querySelectorAll("#scores .bar").length`, &bars))
	if bars < 5 {
		t.Errorf("track page shows %d score bars, want ≥ 5", bars)
	}
	var sim string
	run("similar", chromedp.Poll(`!document.getElementById("similar").textContent.includes("loading")`, nil,
		chromedp.WithPollingTimeout(10*time.Second)), chromedp.Text("#similar", &sim, chromedp.ByQuery))
	if !strings.Contains(sim, "imilar") {
		t.Errorf("similar tracks: %q", sim)
	}
	shot("track")

	// A failed file shows its error.
	open("/library?status=failed", "library")
	run("failed track", chromedp.AttributeValue(`#files tbody tr a`, "href", &href, nil, chromedp.ByQuery))
	open(href, "track")
	run("status", chromedp.Text("#status", &errText, chromedp.ByQuery))
	if !strings.Contains(errText, "invalid frame header") {
		t.Errorf("failed track status: %q", errText)
	}

	// Insights: one histogram per head, moods and genres drawn.
	open("/insights", "insights")
	var hists int
	run("histograms", chromedp.Evaluate(`document.querySelectorAll("#histograms svg rect").length`, &hists))
	if hists < 5*20 {
		t.Errorf("insights: %d histogram bars", hists)
	}
	shot("insights")

	// Playlists: a rule previewed.
	open("/playlists?mood=happy&score=danceable_musicnn_danceability:0.3:1", "playlists")
	var preview int
	run("preview", chromedp.Evaluate(`document.querySelectorAll("#preview-list li").length`, &preview))
	if preview == 0 {
		t.Errorf("playlist preview is empty")
	}
	shot("playlists")

	// Health: pause and resume from the page.
	open("/health", "health")
	run("pause", chromedp.Click("#pause", chromedp.ByQuery), chromedp.Poll(`document.getElementById("enabled").textContent === "paused"`, nil,
		chromedp.WithPollingTimeout(10*time.Second)))
	shot("health")
	run("resume", chromedp.Click("#resume", chromedp.ByQuery), chromedp.Poll(`document.getElementById("enabled").textContent === "running"`, nil,
		chromedp.WithPollingTimeout(10*time.Second)))
	run("no error", chromedp.Text("#err", &errText, chromedp.ByQuery))
	if errText != "" {
		t.Errorf("health page error: %q", errText)
	}
}
