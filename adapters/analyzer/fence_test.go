package analyzer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// The tag write happens only after the job's fence confirmed the claim:
// a claim that is gone leaves the file byte for byte as it was and the
// result is Lost; a store that cannot answer leaves it too, and the result
// is service_down (store) keeping the derived tags as its checkpoint, so
// the retry resumes at the write. A confirmed fence lets the write happen.
func TestTagWriteOnlyBehindTheFence(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	p := filepath.Join(t.TempDir(), "a.flac")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", p).CombinedOutput(); err != nil {
		t.Fatalf("make a.flac: %v %s", err, out)
	}
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &MusiCNN{WriteMode: "full", Models: stubModels(t, "")}
	cp := tagsCheckpoint(t, m.Models.Version(), p)
	analyze := func(fence func() error) worker.Result {
		t.Helper()
		calls := 0
		job := worker.Job{FileKey: "a", Path: p, Checkpoint: cp, Fence: func() error { calls++; return fence() }}
		r := m.Analyze(context.Background(), job, func(int64) {})
		if calls != 1 {
			t.Fatalf("fence called %d times, want once", calls)
		}
		return r
	}
	unchanged := func(what string) {
		t.Helper()
		now, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(now, orig) {
			t.Fatalf("%s: the file changed (%v)", what, err)
		}
	}

	r := analyze(func() error { return fmt.Errorf("claim of a: %w", store.ErrClaimLost) })
	if r.Class != worker.Lost || r.Checkpoint != "" {
		t.Fatalf("claim lost: %+v, want class %s", r, worker.Lost)
	}
	unchanged("claim lost")

	r = analyze(func() error { return errors.New("database is locked") })
	if r.Class != worker.ServiceDown || r.Dependency != worker.DepStore || r.Checkpoint != cp {
		t.Fatalf("store down: %+v, want service_down (store) with the tags as checkpoint", r)
	}
	unchanged("store down")

	r = analyze(func() error { return nil })
	if r.Class == worker.ServiceDown && r.Reason == tagwrite.ErrNoTagLib.Error() {
		t.Skip("built without TagLib (cgo off or notaglib tag)")
	}
	if r.Class != worker.OK || r.Rewritten == nil {
		t.Fatalf("fence confirmed: %+v, want OK with the rewritten file", r)
	}
	if now, _ := os.ReadFile(p); bytes.Equal(now, orig) {
		t.Fatal("fence confirmed, yet the file was not written")
	}
}
