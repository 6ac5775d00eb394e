package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// benchLibrary is the database BenchmarkDiscover and BenchmarkCounts read,
// of benchFiles files (100,000; NOMARR_BENCH_FILES sets another), built
// once per test binary: 30% tagged, 2% failed, 1% waiting for a retry, 1%
// invalid, and 16 claims on the first pending files (workers busy with them).
var benchLibrary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

var benchFiles = func() int {
	if v, err := strconv.Atoi(os.Getenv("NOMARR_BENCH_FILES")); err == nil && v > 0 {
		return v
	}
	return 100_000
}()

func libraryDB(b *testing.B) string {
	benchLibrary.once.Do(func() {
		dir, err := os.MkdirTemp("", "nomarr-sqlite-bench-")
		if err != nil {
			benchLibrary.err = err
			return
		}
		benchLibrary.dir, benchLibrary.path = dir, filepath.Join(dir, "library.db")
		s, err := Open(benchLibrary.path)
		if err != nil {
			benchLibrary.err = err
			return
		}
		defer s.Close()
		files := make([]store.File, 0, benchFiles)
		for i := range benchFiles {
			f := mkf(fmt.Sprintf("lib/%07d", i))
			switch h := (i * 7919) % 100; {
			case h < 30:
				f.NeedsTagging, f.Tagged = false, true
			case h < 32:
				f.Failed = true
			case h < 33:
				f.NextRetryAt = at(time.Hour)
			case h < 34:
				f.IsValid = false
			}
			files = append(files, f)
		}
		for chunk := range slices.Chunk(files, 10_000) {
			if _, benchLibrary.err = s.UpsertFiles(bg, chunk); benchLibrary.err != nil {
				return
			}
		}
		pending, err := s.Discover(bg, t0, "", 16)
		if err != nil {
			benchLibrary.err = err
			return
		}
		for i, f := range pending {
			if _, benchLibrary.err = s.Claim(bg, claim(f.Key, fmt.Sprintf("i/w%d", i), t0, time.Hour)); benchLibrary.err != nil {
				return
			}
		}
	})
	if benchLibrary.err != nil {
		b.Fatal(benchLibrary.err)
	}
	return benchLibrary.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLibrary.dir != "" {
		os.RemoveAll(benchLibrary.dir)
	}
	os.Exit(code)
}

// percentile returns the q-quantile of ds (sorted in place).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q * float64(len(ds)-1))
	return ds[i]
}

// BenchmarkDiscover: the worker's discovery query (a batch of 8 from the
// start) on a 100,000-file library; reports p50 and p99 latency.
func BenchmarkDiscover(b *testing.B) {
	s := openT(b, libraryDB(b))
	for _, tc := range []struct {
		name   string
		after  func(i int) string
		writer bool
	}{
		{"from-start", func(int) string { return "" }, false},
		{"cursor", func(i int) string { return fmt.Sprintf("lib/%07d", (i*7717)%benchFiles) }, false},
		// Another handle (another process, as far as SQLite is concerned)
		// claims and releases the first pending files all the while.
		{"from-start-with-writer", func(int) string { return "" }, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.writer {
				stop := churn(b, libraryDB(b))
				defer stop()
			}
			ds := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				fs, err := s.Discover(bg, t0, tc.after(i), 8)
				ds = append(ds, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(fs) == 0 && tc.after(i) == "" {
					b.Fatal("no files discovered")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(percentile(ds, 0.50).Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(percentile(ds, 0.99).Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// churn claims and releases pending files on its own handle until stopped.
func churn(b *testing.B, path string) (stop func()) {
	w := openT(b, path)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			fs, err := w.Discover(bg, t0, "", 4)
			if err != nil {
				b.Error(err)
				return
			}
			for _, f := range fs {
				worker := fmt.Sprintf("churn/w%d", i%4)
				if _, err := w.Claim(bg, claim(f.Key, worker, t0, time.Hour)); err != nil {
					b.Error(err)
					return
				}
				if err := w.Release(bg, store.Ref{FileKey: f.Key, WorkerID: worker}, nil); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// BenchmarkCycle: discover+claim+complete cycles in one process, one worker;
// b.N files; reports files/s.
func BenchmarkCycle(b *testing.B) {
	s := openT(b, tempDB(b))
	seedN(b, s, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	done, _, err := workLoop(bg, s, "i/worker:discovery:0")
	el := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if done != b.N {
		b.Fatalf("completed %d of %d", done, b.N)
	}
	b.ReportMetric(float64(done)/el.Seconds(), "files/s")
}

// BenchmarkCycleProcs: the same cycle in 1, 2 and 4 child processes sharing
// one database file; b.N files in all; reports files/s for the whole group
// (process start-up and opening excluded).
func BenchmarkCycleProcs(b *testing.B) {
	for _, procs := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			b.StopTimer()
			path := tempDB(b)
			s := openT(b, path)
			seedN(b, s, b.N)
			kids := startChildren(b, path, procs)
			b.StartTimer()
			start := time.Now()
			res, total, conflicts := runChildren(b, kids)
			el := time.Since(start)
			b.StopTimer()
			var maxWait time.Duration
			for _, r := range res {
				maxWait = max(maxWait, r.maxWait)
			}
			if total != b.N {
				b.Fatalf("completed %d of %d", total, b.N)
			}
			b.ReportMetric(float64(total)/el.Seconds(), "files/s")
			b.ReportMetric(float64(conflicts)/float64(total), "conflicts/file")
			b.ReportMetric(float64(maxWait.Microseconds())/1e3, "max-lock-wait-ms")
		})
	}
}

// BenchmarkRescanInventory: what a rescan of a 100,000-file library adds to
// the upserts — reading every file in pages of 5,000 (ListFiles) to find
// the ones that left, and marking 1,000 of them missing and, at the next
// scan, valid again.
func BenchmarkRescanInventory(b *testing.B) {
	s := openT(b, libraryDB(b))
	var gone []store.File // valid files of the library (see libraryDB)
	for i := 0; len(gone) < 1000; i++ {
		if (i*7919)%100 >= 34 {
			gone = append(gone, mkf(fmt.Sprintf("lib/%07d", i)))
		}
	}
	keys := make([]string, len(gone))
	for i, f := range gone {
		keys[i] = f.Key
	}
	b.Run("list-100k", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for after := ""; ; {
				page, err := s.ListFiles(bg, after, 5000)
				if err != nil {
					b.Fatal(err)
				}
				n += len(page)
				if len(page) < 5000 {
					break
				}
				after = page[len(page)-1].Key
			}
			if n != benchFiles {
				b.Fatalf("listed %d files, want %d", n, benchFiles)
			}
		}
		b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
	})
	b.Run("mark-and-back-1000", func(b *testing.B) {
		for b.Loop() {
			if n, err := s.MarkMissing(bg, keys); err != nil || n != len(keys) {
				b.Fatalf("MarkMissing = %d, %v", n, err)
			}
			if _, err := s.UpsertFiles(bg, gone); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRescanRetag: what looking for files tagged by another model set
// adds to a rescan's listing of a 100,000-file library, all tagged by model
// set v1, read in pages of 5,000 (list-100k, as BenchmarkRescanInventory):
// the models did not change (stale-none: Scan.Stale finds nothing on
// each page, no store call — the common case), or they did (retag-all:
// every file is stale, one Retag call per page; max-retag-ms is the
// longest call, a write transaction that holds the lock).
func BenchmarkRescanRetag(b *testing.B) {
	path := filepath.Join(b.TempDir(), "retag.db")
	s := openT(b, path)
	files := make([]store.File, 0, benchFiles)
	for i := range benchFiles {
		f := mkf(fmt.Sprintf("lib/%07d", i))
		f.NeedsTagging, f.Tagged, f.TaggedVersion, f.LastTaggedAt = false, true, "v1", t0
		files = append(files, f)
	}
	for chunk := range slices.Chunk(files, 10_000) {
		if _, err := s.UpsertFiles(bg, chunk); err != nil {
			b.Fatal(err)
		}
	}
	db := raw(b, path)
	walked := inventory.Scan{Seen: make(map[string]bool, len(files))} // the walk found every file
	for _, f := range files {
		walked.Seen[f.Key] = true
	}
	// scan lists the library, applying page to each page; it returns how
	// many files it listed.
	scan := func(b *testing.B, page func([]store.File)) {
		n := 0
		for after := ""; ; {
			fs, err := s.ListFiles(bg, after, 5000)
			if err != nil {
				b.Fatal(err)
			}
			page(fs)
			n += len(fs)
			if len(fs) < 5000 {
				break
			}
			after = fs[len(fs)-1].Key
		}
		if n != benchFiles {
			b.Fatalf("listed %d files, want %d", n, benchFiles)
		}
	}
	b.Run("list-100k", func(b *testing.B) {
		for b.Loop() {
			scan(b, func([]store.File) {})
		}
		b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
	})
	b.Run("list-100k+stale-none", func(b *testing.B) {
		for b.Loop() {
			scan(b, func(page []store.File) {
				if keys := walked.Stale(page, "v1"); len(keys) > 0 {
					b.Fatalf("%d stale files", len(keys))
				}
			})
		}
		b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
	})
	b.Run("list-100k+retag-all", func(b *testing.B) {
		var longest time.Duration
		for b.Loop() {
			total := 0
			scan(b, func(page []store.File) {
				keys := walked.Stale(page, "v2")
				start := time.Now()
				n, err := s.Retag(bg, keys, "v2")
				longest = max(longest, time.Since(start))
				if err != nil || n != len(keys) {
					b.Fatalf("Retag = %d, %v; want %d", n, err, len(keys))
				}
				total += n
			})
			if total != benchFiles {
				b.Fatalf("retagged %d files, want %d", total, benchFiles)
			}
			b.StopTimer()
			if _, err := db.Exec(`UPDATE library_files SET tagged = 1, needs_tagging = 0`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
		b.ReportMetric(float64(longest.Microseconds())/1e3, "max-retag-ms")
	})
	if c, err := s.Counts(bg); err != nil || c != (store.Counts{Total: benchFiles, Tagged: benchFiles}) {
		b.Fatalf("Counts after the benchmark = %+v, %v", c, err)
	}
}

// BenchmarkCounts: the library summary that `nomarr tag`'s progress line
// and the dashboard (/api/v1/info) poll, on the benchmark library; reports
// p50 and p99 latency.
func BenchmarkCounts(b *testing.B) {
	s := openT(b, libraryDB(b))
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, err := s.Counts(bg)
		ds = append(ds, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if c.Total != benchFiles {
			b.Fatalf("counted %d files, want %d", c.Total, benchFiles)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(ds, 0.50).Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(percentile(ds, 0.99).Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkDiscoverWaiting: discovery from the start (as workers discover)
// on benchFiles files, 10 % of them tagged, when the first files in key
// order wait for a retry: where workers' transient failures pile up, since
// they claim in key order. "all" has every pending file waiting: nothing
// to discover. "ended-20%" has every fifth file's wait over (they ended
// between two runs), before and after a cleanup settles them. Reports p50
// and p99 latency.
func BenchmarkDiscoverWaiting(b *testing.B) {
	for _, tc := range []struct {
		name    string
		waiting float64 // share of the files, from the front
		ended   bool    // every fifth file's wait ended instead (between two runs)
		settled bool    // and a cleanup has settled them
	}{{"front-10%", 0.10, false, false}, {"front-50%", 0.50, false, false}, {"all", 1, false, false},
		{"ended-20%-unsettled", 0, true, false}, {"ended-20%-settled", 0, true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "waiting.db")
			s := openT(b, path)
			files := make([]store.File, 0, 10_000)
			for i := range benchFiles {
				f := mkf(fmt.Sprintf("lib/%07d", i))
				if i%10 == 0 {
					f.NeedsTagging, f.Tagged = false, true
				} else if float64(i) < tc.waiting*float64(benchFiles) {
					f.Attempts, f.NextRetryAt = 1, at(time.Hour)
				} else if tc.ended && i%5 == 1 {
					f.Attempts, f.NextRetryAt = 1, at(-time.Minute)
				}
				files = append(files, f)
				if len(files) == cap(files) || i == benchFiles-1 {
					if _, err := s.UpsertFiles(bg, files); err != nil {
						b.Fatal(err)
					}
					files = files[:0]
				}
			}
			if tc.settled {
				if _, err := s.CleanupClaims(bg, t0); err != nil {
					b.Fatal(err)
				}
			}
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				fs, err := s.Discover(bg, t0, "", 8)
				ds = append(ds, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(fs) == 0 && tc.waiting < 1 {
					b.Fatal("no files discovered")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(percentile(ds, 0.50).Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(percentile(ds, 0.99).Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkUpgrade: the one-time upgrade of a schema version 1 file of
// benchFiles files (paths of a real library's length, 1 % waiting for a
// retry) when it is first opened for writing: the time of that open.
func BenchmarkUpgrade(b *testing.B) {
	dir := b.TempDir()
	v1 := filepath.Join(dir, "v1.db")
	s := openT(b, v1)
	files := make([]store.File, 0, 10_000)
	for i := range benchFiles {
		f := mkf(fmt.Sprintf("%032x", i))
		f.Path = fmt.Sprintf("/srv/media/music/Some Artist Name/Some Album Title (Deluxe Edition) [2003]/%02d - A Fairly Long Track Title.flac", i%100)
		if i%100 == 0 {
			f.Attempts, f.NextRetryAt = 1, time.Now().Add(time.Hour)
		}
		files = append(files, f)
		if len(files) == cap(files) || i == benchFiles-1 {
			if _, err := s.UpsertFiles(bg, files); err != nil {
				b.Fatal(err)
			}
			files = files[:0]
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	downgradeToV1(b, v1)
	data, err := os.ReadFile(v1)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("run%d.db", i))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if c, err := s.Counts(bg); err != nil || c.Total != benchFiles {
			b.Fatalf("counts after the upgrade: %+v, %v", c, err)
		}
		s.Close()
		os.Remove(path)
		b.StartTimer()
	}
}

// BenchmarkQuickCheck: PRAGMA quick_check on the 100,000-file library, the
// cost an integrity check at every Open would add (BenchmarkOpen: the open
// without it).
func BenchmarkQuickCheck(b *testing.B) {
	s, err := Open(libraryDB(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		var res string
		if err := s.r.QueryRowContext(bg, `PRAGMA quick_check`).Scan(&res); err != nil || res != "ok" {
			b.Fatalf("quick_check = %q, %v", res, err)
		}
	}
}

// BenchmarkOpen: Open and Close of the 100,000-file library.
func BenchmarkOpen(b *testing.B) {
	path := libraryDB(b)
	for b.Loop() {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkFirstScan: a first scan's upserts into a new store, 100,000
// files (benchFiles) in batches of 1,000, each file new: what the
// triggers that index a file for the library page (its counts, its row
// in the full-text index) add to a scan.
func BenchmarkFirstScan(b *testing.B) {
	files := make([]store.File, benchFiles)
	for i := range files {
		files[i] = mkf(fmt.Sprintf("scan/%07d", i))
		files[i].Path = fmt.Sprintf("/music/Artist %04d/Album %02d/%02d - a fairly long track title.flac", i/40, (i/10)%4, i%10)
	}
	for b.Loop() {
		b.StopTimer()
		s := openT(b, filepath.Join(b.TempDir(), "scan.db"))
		b.StartTimer()
		for c := range slices.Chunk(files, 1000) {
			if _, err := s.UpsertFiles(bg, c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(benchFiles*b.N)/b.Elapsed().Seconds(), "files/s")
}
