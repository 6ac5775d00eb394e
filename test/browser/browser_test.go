// Package browser drives the pages of `nomarr serve` in Debian's headless
// chromium (github.com/chromedp/chromedp): a real binary, built here, on
// a store filled with a tagged library. Each page is loaded and used as a
// person would (search, filters, the track's scores, pause and resume on
// the Health page), and a screenshot of each is written to
// $NOMARR_TEST_SCREENSHOTS (default: a temporary folder, logged).
// BenchmarkPageLoad times the pages on a library of 100,000 files.
//
// Without chromium the tests skip, saying how to run them, unless
// NOMARR_TEST_REQUIRE_BROWSER is set: then they fail (CI installs chromium with
// scripts/deps.sh --test).
package browser

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// chromium finds the browser, or skips (fails with NOMARR_TEST_REQUIRE_BROWSER).
func chromium(t testing.TB) string {
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

// moods, genres and artists of the demo library, by index. The artists
// are in the files' info only, not in their paths.
var (
	moods   = []string{"happy", "sad", "relaxed", "party", "aggressive"}
	genres  = []string{"rock", "pop", "jazz", "electronic", "folk"}
	artists = []string{"Nina Quartet", "Miles Ensemble", "Aurora Voices", "Bjorn Collective", "Kate Harmonics"}
)

// writeWAV writes one second of a 440 Hz tone, 8 kHz 16-bit mono PCM.
func writeWAV(t *testing.T, path string) {
	const rate, n = 8000, 8000
	b := make([]byte, 44+2*n)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], rate)
	binary.LittleEndian.PutUint32(b[28:], 2*rate)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(int16(8000*math.Sin(2*math.Pi*440*float64(i)/rate))))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// demoFile is one file of the demo library: its tags and info when it is
// tagged, its error when it failed.
type demoFile struct {
	store.File
	Tags   map[string]string
	Info   store.FileInfo
	Failed string
	At     time.Time // when it was tagged, or failed
}

// demoLibrary is a library of n files: most tagged with scores and mood
// lists and an artist, title and album, every tenth failed, all of them
// before now; the first file's path is audio, when given.
func demoLibrary(n int, audio string) []demoFile {
	files := make([]demoFile, n)
	now := time.Now().Add(-time.Hour - time.Duration(n)*time.Second)
	for i := range files {
		f := &files[i]
		f.File = store.File{Key: demoKey(i), Size: 1000, NeedsTagging: true, IsValid: true,
			Path: fmt.Sprintf("/music/%s Band %d/Album %d/%02d %s Song.flac", strings.ToUpper(genres[i%5][:1])+genres[i%5][1:], i%7, i%3, i, moods[i%5])}
		f.At = now.Add(time.Duration(i) * time.Second)
		if i%10 == 9 {
			f.Failed = "decode: invalid frame header"
			continue
		}
		x := func(k int) float64 { return float64((i*37+k*53)%100) / 100 }
		tags := map[string]string{"nom_version": analyzer.NoopVersion}
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
		f.Tags = tags
		f.Info = store.FileInfo{Artist: artists[i%5], Title: fmt.Sprintf("%s Song %d", strings.ToUpper(moods[i%5][:1])+moods[i%5][1:], i),
			Album: fmt.Sprintf("Album %d", i%3), DurationMs: int64(180_000 + i*1000)}
	}
	if audio != "" && n > 0 {
		files[0].Path = audio
	}
	return files
}

// fillStore writes the demo library of n files (demoLibrary) into a new
// SQLite store, as serve's workers would, file by file (claimed, then
// completed or released failed, and given its info), none left pending
// (the workers of serve have nothing to do), and stores the library
// calibration of the noop model set.
func fillStore(t testing.TB, db string, n int, audio string) {
	ctx := context.Background()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lib := demoLibrary(n, audio)
	if _, err := st.UpsertFiles(ctx, files(lib)); err != nil {
		t.Fatal(err)
	}
	for _, f := range lib {
		if _, err := st.Claim(ctx, store.Claim{FileKey: f.Key, WorkerID: "demo/w", ClaimedAt: f.At, LeaseUntil: f.At.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		ref := store.Ref{FileKey: f.Key, WorkerID: "demo/w"}
		if f.Failed != "" {
			if err := st.Release(ctx, ref, &store.FileUpdate{Attempts: 3, Failed: true, LastError: f.Failed}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := st.Complete(ctx, ref, store.Completion{Tags: f.Tags, Version: analyzer.NoopVersion, At: f.At}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutFileInfo(ctx, f.Key, f.Info); err != nil {
			t.Fatal(err)
		}
	}
	putCalibration(t, st, lib)
}

func files(lib []demoFile) []store.File {
	out := make([]store.File, len(lib))
	for i, f := range lib {
		out[i] = f.File
	}
	return out
}

// putCalibration stores the calibration of lib's mood scores.
func putCalibration(t testing.TB, st *sqlite.Store, lib []demoFile) {
	cal := map[string][]float64{}
	for _, f := range lib {
		for k, v := range f.Tags {
			if x, err := strconv.ParseFloat(v, 64); err == nil && strings.Contains(k, "_musicnn_mood_") {
				cal[k] = append(cal[k], x)
			}
		}
	}
	c, err := newCalibration(cal)
	if err != nil {
		t.Fatal(err)
	}
	js, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetMeta(context.Background(), app.MetaCalibration, js); err != nil {
		t.Fatal(err)
	}
}

// newCalibration is the calibration of the demo's mood class scores,
// of the noop model set that serve runs (and the demo's files are tagged
// by).
func newCalibration(scores map[string][]float64) (*tags.Calibration, error) {
	keep := map[string][]float64{}
	for k, v := range scores {
		for _, h := range tags.Heads {
			if c := tags.Classes[h]; k == tags.ClassKey(h, c[0]) || k == tags.ClassKey(h, c[1]) {
				keep[k] = v
			}
		}
	}
	return tags.NewCalibration(analyzer.NoopVersion, 108, keep)
}

// demoKey is the demo's i-th file key, of a real key's form (32 hex
// digits, as library.Key makes them).
func demoKey(i int) string { return fmt.Sprintf("%032x", i*2654435761%(1<<32)) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// nomarr builds the binary once for all tests of the run.
func nomarr(t testing.TB) string {
	buildOnce.Do(func() {
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "nomarr-browser-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "nomarr")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/nomarr")
		build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// serve runs `nomarr serve` on db, on a free port of host (with the API
// token when token is not ""), with args added; it returns the base URL
// (on 127.0.0.1) once the API answers.
func serve(t testing.TB, db, host, token string, args ...string) string {
	bin := nomarr(t)
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	dataDir := t.TempDir()
	args = append([]string{"serve", "--http-addr", net.JoinHostPort(host, port), "--db", "sqlite:" + db, "--analyzer", "noop",
		"--data-dir", dataDir, "--log-level", "warn"}, args...)
	if token != "" {
		args = append(args, "--api-token", token)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	for _, e := range os.Environ() { // the test's own settings are not serve's
		if !strings.HasPrefix(e, "NOMARR_TEST_SCREENSHOTS=") && !strings.HasPrefix(e, "NOMARR_TEST_REQUIRE_BROWSER=") &&
			!strings.HasPrefix(e, "NOMARR_BENCH_FILES=") {
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
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/info", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if r, err := http.DefaultClient.Do(req); err == nil {
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
func shots(t testing.TB) string {
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

// page drives one chromium tab on a served base URL.
type page struct {
	t    testing.TB
	ctx  context.Context
	base string
	dir  string // screenshots
}

func newPage(t testing.TB, base string) *page { return newPageFor(t, base, 3*time.Minute) }

// newPageFor opens a tab whose actions must all end within limit.
func newPageFor(t testing.TB, base string, limit time.Duration) *page {
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, limit)
	t.Cleanup(cancel)
	return &page{t: t, ctx: ctx, base: base, dir: shots(t)}
}

func (p *page) run(what string, acts ...chromedp.Action) {
	p.t.Helper()
	if err := chromedp.Run(p.ctx, acts...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// open loads path and waits until the page named page is drawn.
func (p *page) open(path, page string) {
	p.t.Helper()
	p.run("open "+path, chromedp.Navigate(p.base+path), chromedp.WaitVisible(`body[data-ready="`+page+`"]`, chromedp.ByQuery))
}

// shot writes the viewport as name.png.
func (p *page) shot(name string) {
	p.t.Helper()
	var png []byte
	p.run("screenshot "+name, chromedp.CaptureScreenshot(&png))
	if err := os.WriteFile(filepath.Join(p.dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func TestPages(t *testing.T) {
	chromium(t)
	db := filepath.Join(t.TempDir(), "nomarr.db")
	fillStore(t, db, 120, "")
	lists := t.TempDir()
	base := serve(t, db, "127.0.0.1", "", "--calibration", "library", "--playlists-dir", lists)
	p := newPage(t, base)
	run, open, shot := p.run, p.open, p.shot
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
	// Search by artist: the artist is in the files' tags, not their paths.
	run("search by artist", chromedp.Evaluate(`(() => { const f = document.getElementById("filters");
		f.q.value = "aurora"; f.requestSubmit(); return true })()`, nil),
		chromedp.Sleep(500*time.Millisecond), chromedp.WaitVisible(`body[data-ready="library"]`, chromedp.ByQuery))
	var credits string
	run("credits", chromedp.Evaluate(`[...document.querySelectorAll("#files tbody .credits")].map(d => d.textContent).join("|")`, &credits))
	if got := count(); got != "1–24 of 24" || rows() != 24 || strings.Count(credits, "Aurora Voices") != 24 {
		t.Fatalf("search by artist: %q, %d rows, credits %q", got, rows(), credits)
	}
	shot("library-artist")
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
	var calState string
	var calRows int
	run("calibration", chromedp.Text("#cal-state", &calState, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#cal-ranges tbody tr").length`, &calRows))
	if calState != "In force" || calRows != 5 {
		t.Errorf("insights calibration: %q, %d classes, want In force and 5", calState, calRows)
	}
	shot("insights")

	// Playlists: a rule previewed.
	open("/playlists?mood=happy&score=danceable_musicnn_danceability:0.3:1", "playlists")
	var preview int
	run("preview", chromedp.Evaluate(`document.querySelectorAll("#preview-list li").length`, &preview))
	if preview == 0 {
		t.Errorf("playlist preview is empty")
	}
	var msg string
	run("save", chromedp.SendKeys("#pl-name", "Happy dance", chromedp.ByQuery), chromedp.Click("#save-btn", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("save-msg").textContent !== ""`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text("#save-msg", &msg, chromedp.ByQuery))
	if !strings.HasPrefix(msg, "Saved Happy dance: ") || strings.HasPrefix(msg, "Saved Happy dance: 0 ") {
		t.Fatalf("save: %q", msg)
	}
	for _, f := range []string{"Happy dance.m3u8", "Happy dance.nsp"} {
		if b, err := os.ReadFile(filepath.Join(lists, f)); err != nil || len(b) == 0 {
			t.Errorf("%s in playlists_dir: %v", f, err)
		}
	}
	var saved string
	run("saved list", chromedp.Poll(`document.getElementById("saved").textContent.includes("Happy dance")`, nil,
		chromedp.WithPollingTimeout(10*time.Second)), chromedp.Text("#saved", &saved, chromedp.ByQuery))
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

// TestAudioWithToken: where a token is required, the track page asks for
// it, and its audio preview plays through the signed URL the page gets
// with it (an <audio> element sends no Authorization header), while the
// audio route without a signature refuses.
func TestAudioWithToken(t *testing.T) {
	chromium(t)
	const token = "browser-test-token"
	dir := t.TempDir()
	wav := filepath.Join(dir, "tone.wav")
	writeWAV(t, wav)
	db := filepath.Join(dir, "nomarr.db")
	fillStore(t, db, 20, wav)
	base := serve(t, db, "0.0.0.0", token)
	p := newPage(t, base)
	p.open("/track?key="+demoKey(0), "track")
	p.run("token", chromedp.WaitVisible("#auth", chromedp.ByQuery), chromedp.SendKeys("#tok", token, chromedp.ByQuery),
		chromedp.Click("#auth button", chromedp.ByQuery), chromedp.Sleep(500*time.Millisecond),
		chromedp.WaitVisible(`body[data-ready="track"]`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("preview") && document.getElementById("preview").src.includes("sig=")`, nil,
			chromedp.WithPollingTimeout(10*time.Second)))
	var state string
	p.run("load the audio", chromedp.Evaluate(`(() => { const a = document.getElementById("preview"); a.preload = "metadata"; a.load(); return true })()`, nil),
		chromedp.Poll(`(() => { const a = document.getElementById("preview"); return a.readyState >= 1 || a.error !== null })()`, nil,
			chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Evaluate(`(() => { const a = document.getElementById("preview");
			return a.error ? "error " + a.error.code : "ready " + a.readyState + " " + Math.round(a.duration) })()`, &state))
	if !strings.HasPrefix(state, "ready ") || !strings.HasSuffix(state, " 1") { // HAVE_METADATA or more, 1 s long
		t.Fatalf("audio element: %s", state)
	}
	var codes string
	p.run("fetch without the token", chromedp.Evaluate(`(async () => {
		const a = document.getElementById("preview");
		const signed = await fetch(a.src, {credentials: "omit"});
		const bare = await fetch("/api/v1/files/`+demoKey(0)+`/audio", {credentials: "omit"});
		return signed.status + " " + bare.status })()`, &codes, func(ep *runtime.EvaluateParams) *runtime.EvaluateParams {
		return ep.WithAwaitPromise(true)
	}))
	if codes != "200 401" {
		t.Errorf("signed and bare audio without the token: %s, want 200 401", codes)
	}
	var artist string
	p.run("artist", chromedp.Text("#artist", &artist, chromedp.ByQuery))
	if artist != "Nina Quartet" {
		t.Errorf("track artist %q", artist)
	}
	p.shot("track-token")
}
