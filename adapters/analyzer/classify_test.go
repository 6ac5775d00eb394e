package analyzer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/worker"
)

// classify carries a decode error's class, reason and missing flag into the
// worker's result, names the dependency of a service_down, and makes any
// other error transient.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want worker.Result
	}{
		{"missing", &audio.Error{Class: worker.Permanent, Reason: "missing", Missing: true},
			worker.Result{Class: worker.Permanent, Reason: "missing", Missing: true}},
		{"not audio", &audio.Error{Class: worker.Permanent, Reason: "not audio: x"},
			worker.Result{Class: worker.Permanent, Reason: "not audio: x"}},
		{"no ffmpeg", &audio.Error{Class: worker.ServiceDown, Reason: "ffmpeg not found"},
			worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: "ffmpeg not found"}},
		{"other", errors.New("boom"), worker.Result{Class: worker.Transient, Reason: "boom"}},
	} {
		got := classify(c.err, worker.DepDecoder)
		if got.Class != c.want.Class || got.Reason != c.want.Reason || got.Missing != c.want.Missing || got.Dependency != c.want.Dependency {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A file that leaves between inference and the tag write (its checkpoint
// holds the derived tags) is marked missing, keeping the checkpoint, and is
// not retried as a transient failure; a folder that left is the same.
func TestWriteToVanishedFile(t *testing.T) {
	dir := t.TempDir()
	m := &MusiCNN{WriteMode: "full", Models: stubModels(t, "")}
	for _, path := range []string{filepath.Join(dir, "gone.flac"), filepath.Join(dir, "gone-dir", "x.flac")} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("analysed"), 0o644); err != nil {
			t.Fatal(err)
		}
		cp := tagsCheckpoint(t, m.Models.Version(), path)
		gone := path
		if filepath.Dir(path) != dir {
			gone = filepath.Dir(path)
		}
		if err := os.RemoveAll(gone); err != nil {
			t.Fatal(err)
		}
		r := m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: cp}, func(int64) {})
		if r.Class != worker.Permanent || !r.Missing || r.Reason != "missing" {
			t.Errorf("%s: %+v, want permanent and missing", path, r)
		}
		if r.Checkpoint != cp {
			t.Errorf("%s: checkpoint %q, want the one it was given", path, r.Checkpoint)
		}
	}
}

// writeError keeps the classes of the other tag-write failures.
func TestWriteError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want worker.Class
		miss bool
	}{
		{fmt.Errorf("tagwrite: write x: %w", fs.ErrNotExist), worker.Permanent, true},
		{fmt.Errorf("tagwrite: write x: %w", syscall.ENOTDIR), worker.Permanent, true},
		{fmt.Errorf("tagwrite: write x: %w", tagwrite.ErrReadOnly), worker.Permanent, false},
		{fmt.Errorf("tagwrite: write x: edit copy (ogg): %w", tagwrite.ErrUnsupported), worker.Permanent, false},
		{tagwrite.ErrNoTagLib, worker.ServiceDown, false},
		{fmt.Errorf("tagwrite: write x: %w", syscall.ENOSPC), worker.Transient, false},
		{fmt.Errorf("tagwrite: write x: %w", tagwrite.ErrModified), worker.Transient, false},
	} {
		got := writeError(c.err)
		if got.Class != c.want || got.Missing != c.miss {
			t.Errorf("%v: %+v, want class %v missing %v", c.err, got, c.want, c.miss)
		}
	}
}

// A read-only file's reason names the cause once (no doubled "tagwrite:"
// prefix) and says how to go on: make it writable, then `nomarr retry`.
func TestReadOnlyReason(t *testing.T) {
	err := fmt.Errorf("tagwrite: write /music/a.flac: %w", fmt.Errorf("%w: file mode -r--r--r-- has no write permission", tagwrite.ErrReadOnly))
	got := writeError(err).Reason
	want := "write tags: /music/a.flac: read-only: file mode -r--r--r-- has no write permission " +
		"(chmod u+w the file, or its folder, then `nomarr retry`; write_mode: none keeps the tags in the store only)"
	if got != want {
		t.Errorf("reason\n%s\nwant\n%s", got, want)
	}
	owner := writeError(fmt.Errorf("tagwrite: write /music/a.flac: %w", tagwrite.ErrOwner)).Reason
	if strings.Contains(owner, "chmod") || strings.Contains(owner, "tagwrite:") {
		t.Errorf("owner reason %q: chmod does not give the file its owner back", owner)
	}
}
