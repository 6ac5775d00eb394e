package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/inventory"
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

// A host whose scans run under another model set (another host sharing
// the store, with other models) holds the re-tagging back, saying so,
// until its record is older than inventory.ModelSetFresh; each scan
// records its own host's version.
func TestTagAgainHeldBackByAHostWithOtherModels(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	audioFiles(t, lib, "1.mp3", "2.mp3")
	script := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 10ms\n")
	tag := func(analyzerName string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, "tag", lib, "--data-dir", data, "--workers", "1", "--analyzer", analyzerName, "--node", "n1")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("tag --analyzer %s: %v\n%s", analyzerName, err, errb.String())
		}
		return errb.String() + out.String()
	}
	tag("script:" + script)
	db := filepath.Join(data, "nomarr.db")
	setOther := func(at time.Time) {
		t.Helper()
		st, err := sqlite.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sets := inventory.ModelSets{"n2": {Version: "0123456789ab", AtMs: at.UnixMilli()}}
		if err := st.SetMeta(context.Background(), inventory.ModelSetsKey, sets.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	setOther(time.Now())
	got := tag("noop")
	if !strings.Contains(got, "nothing to tag") || !strings.Contains(got, "other_node=n2") || !strings.Contains(got, "other_version=0123456789ab") {
		t.Errorf("noop with host n2 on other models:\n%s", got)
	}
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := st.GetMeta(context.Background(), inventory.ModelSetsKey)
	st.Close()
	sets, derr := inventory.DecodeModelSets(raw)
	if err != nil || derr != nil || sets["n1"].Version != analyzer.NoopVersion || sets["n2"].Version != "0123456789ab" {
		t.Errorf("recorded model sets %q (%v, %v), want n1 on noop beside n2's", raw, err, derr)
	}
	setOther(time.Now().Add(-inventory.ModelSetFresh - time.Minute))
	if got := tag("noop"); !strings.Contains(got, "tagged 2, failed 0, pending 0 of 2 files") {
		t.Errorf("noop once n2's record is stale:\n%s", got)
	}
}

// `nomarr scan` only indexes: it sends nothing back to work and records
// no model set, whatever its analyzer and models_dir (the daemon of the
// same host tags with its own).
func TestScanSendsNothingBackToWork(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	audioFiles(t, lib, "1.mp3")
	script := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 10ms\n")
	if out, err := exec.Command(bin, "tag", lib, "--data-dir", data, "--workers", "1", "--analyzer", "script:"+script).CombinedOutput(); err != nil {
		t.Fatalf("tag: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "scan", lib, "--data-dir", data, "--analyzer", "noop").CombinedOutput(); err != nil {
		t.Fatalf("scan: %v\n%s", err, out)
	}
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files, err := st.ListFiles(context.Background(), "", 0)
	if err != nil || len(files) != 1 || !files[0].Tagged || files[0].TaggedVersion != "script-1" {
		t.Errorf("after scan: %+v, %v; want the file still tagged by script-1", files, err)
	}
	if raw, ok, _ := st.GetMeta(context.Background(), inventory.ModelSetsKey); ok {
		t.Errorf("scan recorded a model set: %s", raw)
	}
}
