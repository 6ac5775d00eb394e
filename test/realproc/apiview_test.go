package realproc

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestFailedWorkerShowsNoJob: a worker that died mid-job twice and failed
// (window_limit 1) is shown in /api/v1/info without a pid, phase or job:
// its claim was released and another worker may be tagging that file.
func TestFailedWorkerShowsNoJob(t *testing.T) {
	lib, data, addr := audioDir(t, 10), t.TempDir(), freeAddr(t)
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte("name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 20s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--library-root", lib, "--data-dir", data, "--db", "sqlite:"+filepath.Join(data, "nomarr.db"),
		"--http-addr", addr, "--workers", "1", "--analyzer", "script:"+script, "--node", "failed-view",
		"--frame-interval", "200ms", "--stale-after", "1s", "--hang-after", "3s", "--check-interval", "100ms",
		"--backoff-base", "100ms", "--backoff-max", "200ms", "--window-limit", "1")
	var log syncbuf.Buffer
	cmd.Stderr = &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	type view struct {
		Workers []struct {
			Status, Phase string
			PID           int    `json:"pid"`
			CurrentJob    string `json:"current_job"`
			CurrentPath   string `json:"current_path"`
		} `json:"workers"`
	}
	get := func() (v view, ok bool) {
		resp, err := http.Get("http://" + addr + "/api/v1/info")
		if err != nil {
			return v, false
		}
		defer resp.Body.Close()
		return v, json.NewDecoder(resp.Body).Decode(&v) == nil && len(v.Workers) == 1
	}
	var v view
	last := 0
	eventually.True(t, 20*time.Second, "the worker failed after two deaths mid-job", func() bool {
		var ok bool
		if v, ok = get(); !ok {
			return false
		}
		w := v.Workers[0]
		if w.Status == "failed" {
			return true
		}
		if w.Status == "healthy" && w.Phase == "processing" && w.PID != last {
			last = w.PID
			_ = syscall.Kill(w.PID, syscall.SIGKILL)
		}
		return false
	})
	w := v.Workers[0]
	if w.Phase == "processing" || w.CurrentJob != "" || w.CurrentPath != "" {
		t.Errorf("a failed worker is shown in phase %q on job %q (%s)", w.Phase, w.CurrentJob, w.CurrentPath)
	}
}
