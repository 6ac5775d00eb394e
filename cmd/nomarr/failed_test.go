package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/library"
)

// TestFailedAndRetry: a file that failed for good is listed by `nomarr
// failed` with its reason; `nomarr retry DIR` sends back to work only the
// failed files under DIR, and the next `tag` tags them.
func TestFailedAndRetry(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	paths := audioFiles(t, lib, "a/bad.mp3", "b/bad.mp3", "a/ok.mp3")
	failing := write(t, fmt.Sprintf("name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 10ms\n  overrides:\n"+
		"    %s: {error: permanent}\n    %s: {error: permanent}\n", library.Key(paths[0]), library.Key(paths[1])))
	fine := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 10ms\n")
	nomarr := cli(t, bin, data)
	nomarr(1, "tag", lib, "--workers", "1", "--analyzer", "script:"+failing)

	out, errb := nomarr(0, "failed")
	for _, p := range paths[:2] {
		if !strings.Contains(out, p+"\tpermanent: injected permanent error\n") {
			t.Errorf("failed does not list %s with its reason:\n%s", p, out)
		}
	}
	if strings.Contains(out, paths[2]) || !strings.Contains(errb, "2 failed files; after fixing the cause, `nomarr retry --data-dir "+data+"` sends them back") {
		t.Errorf("failed:\n%s%s", out, errb)
	}
	if out, _ := nomarr(0, "failed", filepath.Join(lib, "b")); strings.Count(out, "\n") != 1 || !strings.Contains(out, paths[1]) {
		t.Errorf("failed under b:\n%s", out)
	}

	out, _ = nomarr(0, "retry", filepath.Join(lib, "a"))
	if !strings.HasPrefix(out, "1 failed file under "+filepath.Join(lib, "a")+" sent back to work; `nomarr tag "+filepath.Join(lib, "a")+" --data-dir "+data+"`") {
		t.Errorf("retry a: %s", out)
	}
	if out, _ := nomarr(0, "failed"); strings.Count(out, "\n") != 1 || !strings.Contains(out, paths[1]) {
		t.Errorf("failed after retrying a:\n%s", out)
	}
	out, _ = nomarr(0, "tag", lib, "--workers", "1", "--analyzer", "script:"+fine)
	if !strings.Contains(out, "tagged 1, failed 0") {
		t.Errorf("tag after retry: %s", out)
	}
	if out, _ := nomarr(0, "retry"); !strings.HasPrefix(out, "1 failed file sent back to work") {
		t.Errorf("retry everything: %s", out)
	}
	if out, _ := nomarr(0, "retry"); out != "no failed files: nothing sent back to work\n" { // says nothing will be tagged
		t.Errorf("retry with no failed file: %q", out)
	}
	nomarr(2, "retry", "a", "b")
}

// cli returns a runner of the nomarr binary with --data-dir data that
// checks the exit code and returns stdout and stderr.
func cli(t *testing.T, bin, data string) func(wantCode int, args ...string) (stdout, stderr string) {
	return func(wantCode int, args ...string) (stdout, stderr string) {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append(args, "--data-dir", data)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Fatalf("nomarr %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
}

// TestFilesCommandsNameAMissingDir: `nomarr failed DIR` (and retry,
// missing, forget) with a DIR that is not there and under which the store
// knows no file is a mistake (a typo), said naming DIR with exit 1, as
// scan and tag say it, not an empty answer with exit 0. A folder that is
// gone but whose files the store keeps (deleted or unmounted since the
// scan) is still answered: that is what missing and forget are for.
func TestFilesCommandsNameAMissingDir(t *testing.T) {
	lib, data := t.TempDir(), t.TempDir()
	paths := audioFiles(t, lib, "a/x.mp3", "b/y.mp3")
	base := []string{"--data-dir", data}
	nomarr := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := run(append(args, base...), &out, &errb); rc != wantCode {
			t.Errorf("nomarr %s: exit %d, want %d; %s%s", strings.Join(args, " "), rc, wantCode, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	nomarr(0, "scan", lib)
	typo := filepath.Join(lib, "c")
	for _, cmd := range []string{"failed", "retry", "missing", "forget"} {
		if _, errb := nomarr(1, cmd, typo); errb != "nomarr "+cmd+": "+typo+": no such file or directory, and the store has no file under it\n" {
			t.Errorf("%s %s: %q", cmd, typo, errb)
		}
	}
	if _, errb := nomarr(0, "failed", filepath.Join(lib, "a")); !strings.HasPrefix(errb, "0 failed files under ") {
		t.Errorf("failed under a folder that is there: %q", errb)
	}
	if err := os.RemoveAll(filepath.Join(lib, "b")); err != nil {
		t.Fatal(err)
	}
	nomarr(0, "scan", lib)
	if out, _ := nomarr(0, "missing", filepath.Join(lib, "b")); out != paths[1]+"\n" {
		t.Errorf("missing under a folder gone since the scan: %q, want %s", out, paths[1])
	}
	nomarr(0, "failed", filepath.Join(lib, "b"))
}
