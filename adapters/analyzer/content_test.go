package analyzer

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/worker"
)

// Tags go only into the content they were derived from: a file replaced
// after it was read (here right before the write, from the fence) is not
// written. The job fails as transient without its checkpoint, so that the
// retry analyses the new content instead of writing the old one's tags
// into it.
func TestNoTagsIntoAnotherContent(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "a.flac")
	rip := filepath.Join(dir, "new-rip.flac")
	for _, f := range []struct{ path, src string }{{p, "sine=duration=2"}, {rip, "sine=frequency=880:duration=3"}} {
		if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", f.src, f.path).CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v %s", f.path, err, out)
		}
	}
	newRip, err := os.ReadFile(rip)
	if err != nil {
		t.Fatal(err)
	}
	m := &MusiCNN{WriteMode: "full", Models: stubModels(t, "")}
	job := worker.Job{FileKey: "a", Path: p, Checkpoint: tagsCheckpoint(t, m.Models.Version(), p),
		Fence: func() error { return os.Rename(rip, p) }} // the user puts a new rip in its place
	r := m.Analyze(context.Background(), job, func(int64) {})
	if r.Class == worker.ServiceDown && r.Reason == tagwrite.ErrNoTagLib.Error() {
		t.Skip("built without TagLib (cgo off or notaglib tag)")
	}
	if r.Class != worker.Transient || r.Checkpoint != "" {
		t.Fatalf("write into a replaced file: %+v, want transient without a checkpoint", r)
	}
	now, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(now, newRip) {
		t.Fatalf("the new rip was written into (%v)", err)
	}
	if held, err := tagwrite.Read(p); err != nil || len(held) != 0 {
		t.Fatalf("the new rip holds tags of ours: %v %v", held, err)
	}
	if !strings.Contains(r.Reason, strings.TrimPrefix(tagwrite.ErrModified.Error(), "tagwrite: ")) { // the reason drops the package's prefix
		t.Fatalf("reason %q does not say the file changed", r.Reason)
	}
}
