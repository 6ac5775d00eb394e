package realproc

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestNodeNameHeldByOneMainProcess: while `nomarr serve` runs, a second
// main process under the same node name on the same store (`nomarr tag`
// with the defaults, on the same host) refuses to start, before its scan,
// spawning nothing, and says once how to fix it. A serve killed with SIGKILL is known gone: the
// next one takes the name at once and runs; after its graceful stop the
// name is handed back and `tag` runs.
func TestNodeNameHeldByOneMainProcess(t *testing.T) {
	lib, data := audioDir(t, 10), t.TempDir()
	serve := func() (*exec.Cmd, *syncbuf.Buffer, string) {
		addr := freeAddr(t)
		cmd := exec.Command(binary, "serve", "--library-root", lib, "--data-dir", data, "--http-addr", addr, "--workers", "1",
			"--analyzer", "noop", "--node", "shared")
		var errb syncbuf.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		eventually.True(t, 15*time.Second, "serve's workers", func() bool {
			info, ok := getInfo(t, addr)
			return ok && len(info.Workers) == 1 && info.Workers[0].Status == "healthy"
		})
		return cmd, &errb, addr
	}
	tag := func() (string, int) { // on new files, so that it has work and starts its main process
		out, err := exec.Command(binary, "tag", "--data-dir", data, "--analyzer", "noop", "--node", "shared", audioDir(t, 3)).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}

	first, _, _ := serve()
	out, code := tag()
	if code != 1 || !strings.Contains(out, `node "shared" is in use by main process shared:`) || !strings.Contains(out, "--node") {
		t.Fatalf("tag beside a running serve: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "msg=spawn") || strings.Contains(out, "worker exiting") {
		t.Fatalf("the refused main process spawned workers:\n%s", out)
	}
	if strings.Count(out, "is in use by") != 1 || strings.Contains(out, "audio files") {
		t.Errorf("tag beside a running serve: want the refusal said once, before any scan:\n%s", out)
	}

	// SIGKILL: the next serve finds the holder gone and starts at once.
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	start := time.Now()
	second, errb, _ := serve()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the serve after a SIGKILL took %s to start (waited for the old hold?)", d)
	}
	if !strings.Contains(errb.String(), "taken over from shared:") {
		t.Errorf("no log line saying the name was taken over from the killed main process:\n%s", errb.String())
	}
	_ = second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, errb.String())
	}
	// Handed back on the graceful stop: tag runs.
	if out, code := tag(); code != 0 || strings.Contains(out, "in use") {
		t.Fatalf("tag after serve stopped: exit %d\n%s", code, out)
	}
}
