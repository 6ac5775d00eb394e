package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyPathArgumentExits2 guards that an empty or blank path argument
// (`nomarr scan "$MUSIC_DIR"` with the variable unset) exits 2 with a
// message saying the path is empty, for every command that takes one,
// instead of meaning the working directory; the store is not touched.
// tag is run as the binary (TestTagEmptyDirLeavesTheWorkingDirectory):
// run in the test binary, a tag that went on would start the test binary
// as its workers.
func TestEmptyPathArgumentExits2(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	audioFiles(t, work, "a.mp3")
	t.Chdir(work)
	for _, c := range [][]string{{"scan"}, {"failed"}, {"retry"}, {"missing"}, {"forget"}, {"sim"}} { // tag: TestTagEmptyDirLeavesTheWorkingDirectory
		for _, dir := range []string{"", " ", "\t"} {
			args := append(append([]string{}, c...), dir)
			if c[0] != "sim" { // a scenario carries its own configuration
				args = append(args, "--data-dir", data)
			}
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "the path is empty") {
				t.Errorf("nomarr %q: exit %d, stderr %q; want 2 and a message saying the path is empty", args, code, errb.String())
			}
		}
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("the data dir holds %d entries after refused commands, want none (no store opened)", len(entries))
	}
}

// TestTagEmptyDirLeavesTheWorkingDirectory guards, through the binary,
// that `nomarr tag ""` neither scans nor rewrites the audio files of the
// working directory: it exits 2 before anything runs.
func TestTagEmptyDirLeavesTheWorkingDirectory(t *testing.T) {
	bin := nomarrBinary(t)
	work, data := t.TempDir(), t.TempDir()
	files := audioFiles(t, work, "a.mp3", "sub/b.flac")
	before, _ := os.Stat(files[0])
	cmd := exec.Command(bin, "tag", "", "--analyzer", "noop", "--data-dir", data)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(string(out), "the path is empty") {
		t.Fatalf("nomarr tag \"\": exit %d (%v), output %q; want 2 and a message saying the path is empty", code, err, out)
	}
	after, _ := os.Stat(files[0])
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("%s changed: %v %d → %v %d", files[0], before.ModTime(), before.Size(), after.ModTime(), after.Size())
	}
	if _, err := os.Stat(filepath.Join(data, "nomarr.db")); err == nil {
		t.Errorf("nomarr tag \"\" created the store %s", filepath.Join(data, "nomarr.db"))
	}
}
