package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// beforeUpsert is a store that runs a hook once, when the scan writes its
// first batch: after the walk read the batch's stats, before the batch
// reaches the store.
type beforeUpsert struct {
	store.Store
	hook func()
}

func (s *beforeUpsert) UpsertFiles(ctx context.Context, files []store.File) (store.Upserted, error) {
	if f := s.hook; f != nil {
		s.hook = nil
		f()
	}
	return s.Store.UpsertFiles(ctx, files)
}

// duringStatSeq is a store that runs a hook once, when the scan asks for
// its first stat sequence number, before the number is taken.
type duringStatSeq struct {
	store.Store
	hook func()
}

func (s *duringStatSeq) NextStatSeq(ctx context.Context) (int64, error) {
	if f := s.hook; f != nil {
		s.hook = nil
		f()
	}
	return s.Store.NextStatSeq(ctx)
}

// rewriteFixture is a library of one file, a.flac, scanned once (it needs
// tagging), and a job that claims it, rewrites it as the tag writer does
// (new size and mtime) and completes with the rewrite.
type rewriteFixture struct {
	t         *testing.T
	ctx       context.Context
	st        *sqlite.Store
	lib, path string
	key       string
	t0        time.Time
	old       store.Stat
	rewritten store.Stat // once the job ran
}

func newRewriteFixture(t *testing.T) *rewriteFixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	x := &rewriteFixture{t: t, ctx: context.Background(), st: st, lib: t.TempDir(),
		t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	x.path = filepath.Join(x.lib, "a.flac")
	x.key = library.Key(x.path)
	x.old = x.write("audio", x.t0)
	x.scan(st)
	return x
}

// write replaces the file's content and mtime and returns its stat.
func (x *rewriteFixture) write(content string, mtime time.Time) store.Stat {
	x.t.Helper()
	if err := os.WriteFile(x.path, []byte(content), 0o644); err != nil {
		x.t.Fatal(err)
	}
	if err := os.Chtimes(x.path, mtime, mtime); err != nil {
		x.t.Fatal(err)
	}
	fi, err := library.Stat(x.path)
	if err != nil {
		x.t.Fatal(err)
	}
	return store.Stat{Size: fi.Size(), MtimeMs: fi.ModTime().UnixMilli()}
}

// scan scans the library into st (the store, or a wrapper of it) and
// returns what the store made of the files found.
func (x *rewriteFixture) scan(st store.Store) inventory.Found {
	x.t.Helper()
	r, err := ScanLibrary(x.ctx, st, x.lib, ModelScan{}, slog.New(slog.DiscardHandler))
	if err != nil {
		x.t.Fatal(err)
	}
	return r.Kinds
}

// wantKinds checks what a scan's summary says of the file.
func (x *rewriteFixture) wantKinds(when string, got, want inventory.Found) {
	x.t.Helper()
	if got != want {
		x.t.Fatalf("%s: the scan counted %+v, want %+v", when, got, want)
	}
}

// job claims the file, rewrites it and completes with the rewrite.
func (x *rewriteFixture) job() {
	now := time.Now()
	if _, err := x.st.Claim(x.ctx, store.Claim{FileKey: x.key, WorkerID: "i/w0", ClaimedAt: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		x.t.Error(err)
		return
	}
	x.rewritten = x.write("audio with tags", x.t0.Add(time.Hour))
	err := x.st.Complete(x.ctx, store.Ref{FileKey: x.key, WorkerID: "i/w0"},
		store.Completion{Version: "v1", At: now, Claimed: &x.old, Rewritten: &x.rewritten})
	if err != nil {
		x.t.Error(err)
	}
}

// want checks the stored file: tagged (or needing tagging) with stat.
func (x *rewriteFixture) want(when string, tagged bool, stat store.Stat) {
	x.t.Helper()
	f, err := x.st.File(x.ctx, x.key)
	if err != nil {
		x.t.Fatal(err)
	}
	if f.Tagged != tagged || f.NeedsTagging == tagged || f.Size != stat.Size || f.MtimeMs != stat.MtimeMs {
		x.t.Fatalf("%s: tagged %v, needs tagging %v, size %d, mtime %d; want tagged %v, size %d, mtime %d",
			when, f.Tagged, f.NeedsTagging, f.Size, f.MtimeMs, tagged, stat.Size, stat.MtimeMs)
	}
}

// A job that rewrites a file and records its new stat between the scan's
// read of the file's stat and the scan's write of its batch keeps what it
// recorded: the file stays tagged, with its new size and mtime, and the
// next scan, which finds it as the job left it, leaves it tagged. Before,
// the batch wrote the stat from before the rewrite back over the job's,
// and the file, taken for changed, was analysed again. A change made
// after the job is still seen by the next scan. The scans count the file
// as they treat it: unchanged (the job's own write is no change), then
// changed.
func TestScanKeepsAJobsRewrite(t *testing.T) {
	x := newRewriteFixture(t)
	found := x.scan(&beforeUpsert{Store: x.st, hook: x.job})
	x.want("after a scan whose batch read the file before the job's rewrite", true, x.rewritten)
	x.wantKinds("a scan whose batch read the file before the job's rewrite", found, inventory.Found{Unchanged: 1})
	found = x.scan(x.st)
	x.want("after the next scan", true, x.rewritten)
	x.wantKinds("the next scan", found, inventory.Found{Unchanged: 1})

	changed := x.write("new audio, changed by hand", x.t0.Add(2*time.Hour))
	found = x.scan(x.st)
	x.want("after a scan of a file changed after the job", false, changed)
	x.wantKinds("a scan of a file changed after the job", found, inventory.Found{Changed: 1})
}

// A scan takes a batch's stat sequence number before the walk reads the
// batch's stats, not when it writes the batch: a job that rewrites the
// file and completes just before the number is taken stamps the file with
// a lower number, and the walk, which reads the stat after, finds the file
// as the job left it; the file stays tagged. A number taken after the
// walk read the stats (just before the upsert) would be higher than the
// completion's stamp, and the stat from before the rewrite would replace
// the job's: the file would need tagging again.
func TestScanTakesItsNumberBeforeTheWalk(t *testing.T) {
	x := newRewriteFixture(t)
	x.scan(&duringStatSeq{Store: x.st, hook: x.job})
	x.want("after a scan during whose first NextStatSeq a job rewrote the file", true, x.rewritten)
}
