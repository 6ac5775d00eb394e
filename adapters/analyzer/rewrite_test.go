package analyzer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// A file the job wrote its tags into stays tagged through the next rescan:
// the write changes the file's size and mtime, and the job's result carries
// the new ones to the store. Without them every file was decoded and run
// through the models a second time after the first rescan.
func TestTaggedFileStaysTaggedAfterRescan(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "a.flac")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", p).CombinedOutput(); err != nil {
		t.Fatalf("make a.flac: %v %s", err, out)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := memstore.New(1)
	scan := func() {
		t.Helper()
		files, _, err := library.Scan(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.UpsertFiles(ctx, files); err != nil {
			t.Fatal(err)
		}
	}
	scan()
	now := time.Now()
	key := library.Key(p)
	ref := store.Ref{FileKey: key, WorkerID: "a/w0"}
	if _, err := st.Claim(ctx, store.Claim{FileKey: key, WorkerID: ref.WorkerID, ClaimedAt: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// The job after inference: its checkpoint holds the derived tags. No
	// model runs: the model files only give the version.
	m := &MusiCNN{WriteMode: "full", Models: stubModels(t, "")}
	cp := tagsCheckpoint(t, m.Models.Version(), p)
	r := m.Analyze(ctx, worker.Job{FileKey: key, Path: p, Checkpoint: cp}, func(int64) {})
	if r.Class == worker.ServiceDown && r.Reason == tagwrite.ErrNoTagLib.Error() {
		t.Skip("built without TagLib (cgo off or notaglib tag)")
	}
	if r.Class != worker.OK || r.Rewritten == nil {
		t.Fatalf("job = %+v, want OK with the rewritten file's stat", r)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rewritten.Size != fi.Size() || r.Rewritten.MtimeMs != fi.ModTime().UnixMilli() {
		t.Fatalf("rewritten = %+v, file now %d bytes, mtime %d", *r.Rewritten, fi.Size(), fi.ModTime().UnixMilli())
	}
	if err := st.Complete(ctx, ref, store.Completion{Tags: r.Tags, Version: r.Version, At: now, Rewritten: r.Rewritten}); err != nil {
		t.Fatal(err)
	}
	scan()
	if again, err := st.Discover(ctx, now.Add(time.Second), "", 10); err != nil || len(again) != 0 {
		t.Fatalf("after a rescan the file just tagged is work again: %v %v", again, err)
	}
}
