// Package unprivileged lets a test that runs as root check what only an
// unprivileged user meets (a mode-000 folder, a read-only database): it
// runs the test again, in a copy of the test binary, as the user nobody.
package unprivileged

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the uid and gid the test runs again as.
const Nobody = 65534

// Rerun runs the tests of this test binary that match pattern (a -test.run
// pattern, e.g. "^TestX$/^case$") again as Nobody, and fails t unless they
// pass with none skipped. Call it where the test would otherwise find that
// root ignores the permissions it sets up. The binary is copied where
// Nobody can run it, with a temporary directory (TMPDIR, HOME) of its own.
func Rerun(t testing.TB, pattern string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nomarr-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, tmp := filepath.Join(dir, "test"), filepath.Join(dir, "tmp")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{dir: 0o755, tmp: 0o777 | os.ModeSticky} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run", pattern, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("-test.run %s as uid %d: %v\n%s", pattern, Nobody, err, out)
	case !strings.Contains(string(out), "--- PASS"), strings.Contains(string(out), "--- SKIP"):
		t.Fatalf("-test.run %s as uid %d ran nothing or skipped:\n%s", pattern, Nobody, out)
	}
	t.Logf("-test.run %s passed as uid %d", pattern, Nobody)
}
