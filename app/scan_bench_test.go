package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
)

// BenchmarkScanLibrary: a rescan (serve does one every rescan_interval) of
// a library of NOMARR_SCAN_FILES files (default 100,000; 1,000 per folder)
// into SQLite: files/s and the peak of live heap during the scan. The walk
// streams files to the store a batch at a time and keeps only their keys,
// so the heap grows with the keys, not with whole file documents.
func BenchmarkScanLibrary(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("NOMARR_SCAN_FILES")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("artist%04d", i/1000), "album")
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("%03d - a fairly long track title.mp3", i%1000)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "nomarr.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx, log := context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil))
	if found, _, err := scanInto(ctx, st, dir, ModelScan{}, log); err != nil || found != n {
		b.Fatalf("first scan: %d files, %v", found, err)
	}
	var peak atomic.Uint64
	for b.Loop() {
		runtime.GC()
		stop := sampleHeap(&peak)
		found, missing, err := scanInto(ctx, st, dir, ModelScan{}, log)
		stop()
		if err != nil || found != n || missing != 0 {
			b.Fatalf("rescan: %d found, %d missing, %v", found, missing, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// sampleHeap records the largest live heap seen in peak every millisecond
// until the returned stop is called.
func sampleHeap(peak *atomic.Uint64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
