package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/sqlite"
)

// Files tagged under another model set are tagged again by the next run
// of the analyzer in use: a trial with one analyzer into the store does
// not leave the library tagged by it. Only the scanned folder's files
// are sent back to work, and a run of the same model set finds nothing
// to do.
func TestTagAgainUnderAnotherModelSet(t *testing.T) {
	bin := nomarrBinary(t)
	a, b, data := t.TempDir(), t.TempDir(), t.TempDir()
	audioFiles(t, a, "a1.mp3", "a2.mp3")
	audioFiles(t, b, "b1.mp3", "b2.mp3", "b3.mp3")
	script := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 10ms\n")
	tag := func(dir, analyzerName string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, "tag", dir, "--data-dir", data, "--workers", "1", "--analyzer", analyzerName)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("tag %s --analyzer %s: %v\n%s", dir, analyzerName, err, errb.String())
		}
		return errb.String() + out.String()
	}
	tag(a, "script:"+script)
	tag(b, "script:"+script)
	if got := tag(a, "noop"); !strings.Contains(got, "tagged 2, failed 0, pending 0 of 5 files") {
		t.Errorf("noop over a's files tagged by the script analyzer:\n%s", got)
	}
	if got := tag(a, "noop"); !strings.Contains(got, "nothing to tag") {
		t.Errorf("noop again:\n%s", got)
	}
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files, err := st.ListFiles(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		want := "script-1"
		if filepath.Dir(f.Path) == a {
			want = analyzer.NoopVersion
		}
		if !f.Tagged || f.TaggedVersion != want {
			t.Errorf("%s: tagged %v by %q, want tagged by %q", f.Path, f.Tagged, f.TaggedVersion, want)
		}
	}
	if len(files) != 5 {
		t.Errorf("%d files stored, want 5", len(files))
	}
}
