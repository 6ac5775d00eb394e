package browser

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// benchFiles is the library size of BenchmarkPageLoad: 100,000 files, or
// NOMARR_BENCH_FILES.
func benchFiles() int {
	if v, err := strconv.Atoi(os.Getenv("NOMARR_BENCH_FILES")); err == nil && v > 0 {
		return v
	}
	return 100_000
}

// fillStoreBulk writes the demo library of n files (demoLibrary) into a
// new SQLite store as fillStore does, but in one transaction: the files
// are upserted through the store, then their completions, failures and
// info are written with the statements Complete, Release and
// PutFileInfo run (the tables' triggers fill the side tables as they
// would), which takes seconds where a hundred thousand transactions of
// one file each take minutes. The store's counts are checked after.
func fillStoreBulk(b *testing.B, db string, n int) {
	ctx := context.Background()
	st, err := sqlite.Open(db)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	lib := demoLibrary(n, "")
	for c := range slices.Chunk(files(lib), 10_000) {
		if _, err := st.UpsertFiles(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	raw, err := sql.Open("sqlite", db+"?_pragma=busy_timeout(10000)&_pragma=cache_size(-524288)&_pragma=temp_store(2)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	prep := func(q string) *sql.Stmt {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	failed := prep(`UPDATE library_files SET attempts = 3, failed = 1, last_error = ? WHERE key = ?`)
	complete := prep(`UPDATE library_files SET tagged = 1, needs_tagging = 0, needs_retag = 0, tagged_version = ?, last_tagged_at = ?
		WHERE key = ?`)
	putTags := prep(`INSERT INTO file_tags (file_key, tags, version, written_at, writes) VALUES (?, ?, ?, ?, 1)`)
	putInfo := prep(`INSERT INTO file_info (file_key, artist, title, album, duration_ms) VALUES (?, ?, ?, ?, ?)`)
	for _, f := range lib {
		at := f.At.UnixMilli()
		if f.Failed != "" {
			_, err = failed.ExecContext(ctx, f.Failed, f.Key)
		} else if doc, jerr := json.Marshal(f.Tags); jerr != nil {
			err = jerr
		} else if _, err = complete.ExecContext(ctx, analyzer.NoopVersion, at, f.Key); err == nil {
			if _, err = putTags.ExecContext(ctx, f.Key, string(doc), analyzer.NoopVersion, at); err == nil {
				_, err = putInfo.ExecContext(ctx, f.Key, f.Info.Artist, f.Info.Title, f.Info.Album, f.Info.DurationMs)
			}
		}
		if err != nil {
			b.Fatalf("file %s: %v", f.Key, err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	c, err := st.Counts(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if want := (store.Counts{Total: n, Tagged: n - n/10, Failed: n / 10}); c != want {
		b.Fatalf("counts after the fill: %+v, want %+v", c, want)
	}
	putCalibration(b, st, lib)
}

// readyMark runs in every document before its own scripts: it records in
// window.__ready[name] the performance.now() (milliseconds since the
// navigation started) at which the router marks the page name drawn
// (body[data-ready=name], set once the page's rows or charts are in the
// DOM).
const readyMark = `window.__ready = {};
new MutationObserver(() => {
  const v = document.body && document.body.dataset.ready;
  if (v && !(v in window.__ready)) window.__ready[v] = performance.now();
}).observe(document, {attributes: true, subtree: true, attributeFilter: ["data-ready"]});`

// drawn waits until the tab's document is the page name, drawn, and
// returns the time from its navigation's start until it was.
func (p *page) drawn(name string) time.Duration {
	p.t.Helper()
	var ms float64
	p.run("wait for "+name, chromedp.WaitVisible(`body[data-ready="`+name+`"]`, chromedp.ByQuery),
		chromedp.Poll(`window.__ready && window.__ready[`+strconv.Quote(name)+`]`, &ms,
			chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	return time.Duration(ms * float64(time.Millisecond))
}

// via does acts on the drawn page (which navigate, as the page's forms,
// headers and links do) and returns how long the next page, name, took
// to draw.
func (p *page) via(name string, acts ...chromedp.Action) time.Duration {
	p.t.Helper()
	p.run("leave", chromedp.Evaluate(`document.body.dataset.ready = "leaving"`, nil))
	p.run(name, acts...)
	return p.drawn(name)
}

// rows is the number of file rows the library page shows.
func (p *page) rows() int {
	p.t.Helper()
	var n int
	p.run("count rows", chromedp.Evaluate(`document.querySelectorAll("#files tbody tr[data-key]").length`, &n))
	return n
}

// submit fills the library page's filter form and submits it.
func submit(q, mood, status string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => { const f = document.getElementById("filters");
		f.q.value = %q; f.mood.value = %q; f.status.value = %q; f.requestSubmit(); return true })()`, q, mood, status), nil)
}

// BenchmarkPageLoad: the pages of `nomarr serve` in chromium on a
// library of 100,000 tagged files (NOMARR_BENCH_FILES sets another
// size), filled once per run. One iteration is a person's round, each
// page reached as they would reach it: the library's first page, a text
// search and a mood filter from its form, the filtered page sorted by
// the mood's score (descending, two clicks on the score column), the
// first track of it, and Insights from the menu. For each page it
// reports p50 and p99 of the time from the navigation's start until its
// rows or charts are in the DOM. One round before the measured ones
// warms the server's and the browser's caches. A screenshot of the
// library's first page is written to $NOMARR_TEST_SCREENSHOTS.
func BenchmarkPageLoad(b *testing.B) {
	chromium(b)
	n := benchFiles()
	db := filepath.Join(b.TempDir(), "nomarr.db")
	start := time.Now()
	fillStoreBulk(b, db, n)
	b.Logf("filled a store of %d files in %s", n, time.Since(start).Round(time.Second))
	base := serve(b, db, "127.0.0.1", "", "--calibration", "library")
	p := newPageFor(b, base, time.Hour)
	p.run("mark drawn pages", chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := cdppage.AddScriptToEvaluateOnNewDocument(readyMark).Do(ctx)
		return err
	}))

	names := []string{"library", "search", "mood", "mood-score", "track", "insights"}
	times := map[string][]time.Duration{}
	round := func() {
		took := func(name string, d time.Duration) { times[name] = append(times[name], d) }
		p.run("open the library", chromedp.Navigate(base+"/library"))
		took("library", p.drawn("library"))
		if r := p.rows(); r != min(50, n) {
			b.Fatalf("library: %d rows", r)
		}
		took("search", p.via("library", submit("aurora", "", "")))
		if r := p.rows(); r == 0 {
			b.Fatal("search for aurora: no rows")
		}
		took("mood", p.via("library", submit("", "happy", "tagged")))
		p.via("library", chromedp.Click(`#files thead th:nth-child(5)`, chromedp.ByQuery))
		took("mood-score", p.via("library", chromedp.Click(`#files thead th:nth-child(5)`, chromedp.ByQuery)))
		var loc string
		p.run("location", chromedp.Location(&loc))
		if !strings.Contains(loc, "mood=happy") || !strings.Contains(loc, "sort=happy_musicnn_mood_happy") ||
			!strings.Contains(loc, "order=desc") || p.rows() == 0 {
			b.Fatalf("mood sorted by score: %s, %d rows", loc, p.rows())
		}
		took("track", p.via("track", chromedp.Click(`#files tbody tr a`, chromedp.ByQuery)))
		var bars int
		p.run("bars", chromedp.Evaluate(`document.querySelectorAll("#scores .bar").length`, &bars))
		if bars < 5 {
			b.Fatalf("track page shows %d score bars", bars)
		}
		took("insights", p.via("insights", chromedp.Click(`#nav a[data-page="insights"]`, chromedp.ByQuery)))
		var hists int
		p.run("histograms", chromedp.Evaluate(`document.querySelectorAll("#histograms svg rect").length`, &hists))
		if hists < 5*20 {
			b.Fatalf("insights: %d histogram bars", hists)
		}
	}
	round()
	b.Logf("warm-up round: %v", times)
	clear(times)
	for b.Loop() {
		round()
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, name := range names {
		ds := times[name]
		slices.Sort(ds)
		at := func(q float64) float64 { return ms(ds[int(q*float64(len(ds)-1))]) }
		b.ReportMetric(at(0.5), name+"-p50-ms")
		b.ReportMetric(at(0.99), name+"-p99-ms")
	}
	p.open("/library", "library")
	var count string
	p.run("count", chromedp.Text("#count", &count, chromedp.ByQuery))
	b.Logf("library: %s", count)
	p.shot("library-pageload")
}
