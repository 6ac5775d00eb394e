package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// beforeUpsert is a store that runs a hook once, when the scan writes its
// first batch: after the walk read the batch's stats, before the batch
// reaches the store.
type beforeUpsert struct {
	store.Store
	hook func()
}

func (s *beforeUpsert) UpsertFiles(ctx context.Context, files []store.File) error {
	if f := s.hook; f != nil {
		s.hook = nil
		f()
	}
	return s.Store.UpsertFiles(ctx, files)
}

// A job that rewrites a file and records its new stat between the scan's
// read of the file's stat and the scan's write of its batch keeps what it
// recorded: the file stays tagged, with its new size and mtime, and the
// next scan, which finds it as the job left it, leaves it tagged. Before,
// the batch wrote the stat from before the rewrite back over the job's,
// and the file, taken for changed, was analysed again. A change made
// after the job is still seen by the next scan.
func TestScanKeepsAJobsRewrite(t *testing.T) {
	lib := t.TempDir()
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	path := filepath.Join(lib, "a.flac")
	key := library.Key(path)
	write := func(content string, mtime time.Time) store.Stat {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		fi, err := library.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return store.Stat{Size: fi.Size(), MtimeMs: fi.ModTime().UnixMilli()}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := write("audio", t0)
	if _, _, err := scanInto(ctx, st, lib, modelScan{}, log); err != nil {
		t.Fatal(err)
	}

	var rewritten store.Stat
	job := func() { // claim, rewrite (as the tag writer does: new size and mtime), complete
		now := time.Now()
		if _, err := st.Claim(ctx, store.Claim{FileKey: key, WorkerID: "i/w0", ClaimedAt: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
			t.Error(err)
			return
		}
		rewritten = write("audio with tags", t0.Add(time.Hour))
		err := st.Complete(ctx, store.Ref{FileKey: key, WorkerID: "i/w0"},
			store.Completion{Version: "v1", At: now, Claimed: &old, Rewritten: &rewritten})
		if err != nil {
			t.Error(err)
		}
	}
	if _, _, err := scanInto(ctx, &beforeUpsert{Store: st, hook: job}, lib, modelScan{}, log); err != nil {
		t.Fatal(err)
	}
	want := func(when string, tagged bool, stat store.Stat) {
		t.Helper()
		f, err := st.File(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if f.Tagged != tagged || f.NeedsTagging == tagged || f.Size != stat.Size || f.MtimeMs != stat.MtimeMs {
			t.Fatalf("%s: tagged %v, needs tagging %v, size %d, mtime %d; want tagged %v, size %d, mtime %d",
				when, f.Tagged, f.NeedsTagging, f.Size, f.MtimeMs, tagged, stat.Size, stat.MtimeMs)
		}
	}
	want("after a scan whose batch read the file before the job's rewrite", true, rewritten)
	if _, _, err := scanInto(ctx, st, lib, modelScan{}, log); err != nil {
		t.Fatal(err)
	}
	want("after the next scan", true, rewritten)

	changed := write("new audio, changed by hand", t0.Add(2*time.Hour))
	if _, _, err := scanInto(ctx, st, lib, modelScan{}, log); err != nil {
		t.Fatal(err)
	}
	want("after a scan of a file changed after the job", false, changed)
}
