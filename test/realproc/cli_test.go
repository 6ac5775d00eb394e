package realproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

func audioDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("album%d", i%3), fmt.Sprintf("track%03d.mp3", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not really audio"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTagCommand(t *testing.T) {
	lib, data := audioDir(t, 60), t.TempDir()
	cmd := exec.Command(binary, "tag", lib, "--analyzer", "noop", "--workers", "3", "--data-dir", data)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("nomarr tag: %v\n%s", err, errb.String())
	}
	if !strings.HasPrefix(out.String(), "tagged 60, failed 0, pending 0 of 60 files") {
		t.Errorf("summary %q", out.String())
	}
	if !strings.Contains(errb.String(), `level=INFO msg="worker exiting"`) {
		t.Errorf("workers logged no exit at the default log level:\n%s", errb.String())
	}
	// Under a cluster-wide pause (left by an earlier run) a one-shot run
	// says so and stops instead of waiting for nothing.
	for _, op := range []string{"pause", "resume"} {
		if b, err := exec.Command(binary, "workers", op, "--data-dir", data).CombinedOutput(); err != nil {
			t.Fatalf("workers %s: %v\n%s", op, err, b)
		}
		if op == "resume" {
			break
		}
		paused := exec.Command(binary, "tag", lib, "--analyzer", "noop", "--data-dir", data)
		var perr bytes.Buffer
		paused.Stderr = &perr
		if err := paused.Run(); err == nil || !strings.Contains(perr.String(), "the workers are paused") {
			t.Errorf("tag while paused: %v\n%s", err, perr.String())
		}
	}
	// A second run tags only the files added since; at log level warn
	// neither the main process nor its workers log their routine steps.
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(lib, fmt.Sprintf("new%d.mp3", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	errb.Reset()
	cmd = exec.Command(binary, "tag", lib, "--analyzer", "noop", "--workers", "2", "--data-dir", data, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || !strings.HasPrefix(out.String(), "tagged 3, failed 0, pending 0 of 63") {
		t.Errorf("second run: %v %q", err, out.String())
	}
	if strings.Contains(errb.String(), "level=INFO") {
		t.Errorf("info lines at log level warn:\n%s", errb.String())
	}
	// A third run finds nothing to do, says so once (its summary) and
	// starts no worker.
	out.Reset()
	errb.Reset()
	cmd = exec.Command(binary, "tag", lib, "--analyzer", "noop", "--workers", "2", "--data-dir", data)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || out.String() != "nothing to tag: 63 files, 63 tagged, 0 failed\n" {
		t.Errorf("third run: %v %q", err, out.String())
	}
	if strings.Contains(errb.String(), "nothing to tag") || strings.Contains(errb.String(), "worker exiting") {
		t.Errorf("third run started workers or said there was nothing to do twice:\n%s", errb.String())
	}
}

// scriptFor writes a scenario for the script analyzer (`--analyzer
// script:FILE`): jobs of 100 ms, the file at path behaving as override
// says (a file's key is the hash of its path).
func scriptFor(t *testing.T, path, override string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.yaml")
	spec := fmt.Sprintf("name: script\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 100ms\n  overrides:\n    %s: %s\n",
		library.Key(path), override)
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A file that fails with a transient error waits a minute for its retry:
// `nomarr tag` does not sit through the wait. It ends once nothing is in
// progress and nothing can be claimed, tags the rest, reports the file as
// pending with a way forward, and exits 1; the file keeps its attempt.
func TestTagLeavesRetryWaitingFiles(t *testing.T) {
	lib, data := audioDir(t, 6), t.TempDir()
	flaky := filepath.Join(lib, "album1", "track001.mp3")
	scenario := scriptFor(t, flaky, "{error: transient}")
	cmd := exec.Command(binary, "tag", lib, "--analyzer", "script:"+scenario, "--workers", "2", "--data-dir", data)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("nomarr tag: %v, want exit 1\n%s", err, errb.String())
	}
	if !strings.HasPrefix(out.String(), "tagged 5, failed 0, pending 1 of 6 files") {
		t.Errorf("summary %q", out.String())
	}
	if !strings.Contains(errb.String(), "1 file waits for a retry after a transient error") {
		t.Errorf("no word of the retry:\n%s", errb.String())
	}
	if took > 30*time.Second {
		t.Errorf("took %v: sat through the retry wait", took)
	}
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := st.File(context.Background(), library.Key(flaky))
	if err != nil || f.Attempts != 1 || f.Failed || !f.NeedsTagging || !f.NextRetryAt.After(time.Now()) {
		t.Errorf("flaky file %+v, %v: want one attempt, a retry due later", f, err)
	}
}

// A file that is gone when its job runs (a share unmounted after the scan)
// is marked missing, not failed: tag says so and exits 1, and the next run,
// whose scan finds the file again, tags it.
func TestTagMissingFileComesBack(t *testing.T) {
	lib, data := audioDir(t, 6), t.TempDir()
	gone := filepath.Join(lib, "album2", "track002.mp3")
	scenario := scriptFor(t, gone, "{error: missing, fail_times: 1}")
	tag := func() (string, string, int) {
		cmd := exec.Command(binary, "tag", lib, "--analyzer", "script:"+scenario, "--workers", "2", "--data-dir", data)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("nomarr tag: %v\n%s", err, errb.String())
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	out, errs, code := tag()
	if code != 1 || !strings.HasPrefix(out, "tagged 5, failed 0, pending 0, missing or empty 1 of 6 files") ||
		!strings.Contains(errs, "1 file went missing during the run") {
		t.Fatalf("first run: exit %d, %q\n%s", code, out, errs)
	}
	out, errs, code = tag()
	if code != 0 || !strings.HasPrefix(out, "tagged 1, failed 0, pending 0 of 6 files") {
		t.Fatalf("second run: exit %d, %q\n%s", code, out, errs)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type apiInfo struct {
	WorkerEnabled bool   `json:"worker_enabled"`
	StoreError    string `json:"store_error"`
	Workers       []struct {
		Component, Status, Phase string
		CurrentPath              string `json:"current_path"`
	} `json:"workers"`
	Library struct{ Total, Tagged, Claimed int } `json:"library"`
}

func getInfo(t *testing.T, addr string) (apiInfo, bool) {
	var info apiInfo
	resp, err := http.Get("http://" + addr + "/api/v1/info")
	if err != nil {
		return info, false
	}
	defer resp.Body.Close()
	return info, json.NewDecoder(resp.Body).Decode(&info) == nil
}

// waitHealthy waits until the API at addr shows n healthy workers: each
// has started and framed.
func waitHealthy(t *testing.T, addr string, n int, limit time.Duration) {
	t.Helper()
	eventually.True(t, limit, fmt.Sprintf("%d healthy workers", n), func() bool {
		info, ok := getInfo(t, addr)
		healthy := 0
		for _, w := range info.Workers {
			if w.Status == "healthy" {
				healthy++
			}
		}
		return ok && healthy == n
	})
}

// Pause and resume over the HTTP API of a running daemon; SIGINT stops it
// gracefully.
func TestServePauseResumeOverAPI(t *testing.T) {
	lib, data, addr := audioDir(t, 40), t.TempDir(), freeAddr(t)
	cmd := exec.Command(binary, "serve", "--library-root", lib, "--data-dir", data, "--http-addr", addr, "--workers", "2",
		"--analyzer", "script:"+scenario("pause-resume.yaml"), "--frame-interval", "200ms", "--stale-after", "1s",
		"--hang-after", "3s", "--check-interval", "100ms", "--idle-poll-min", "100ms", "--idle-poll-max", "500ms")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // like a shell's foreground job
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var info apiInfo
	sawPath := false // a busy worker's file is shown by its path, not its key
	eventually.True(t, 15*time.Second, "the API, the first tagged files and a current file's path", func() bool {
		var ok bool
		info, ok = getInfo(t, addr)
		for _, w := range info.Workers {
			sawPath = sawPath || (strings.HasPrefix(w.CurrentPath, lib) && strings.HasSuffix(w.CurrentPath, ".mp3"))
		}
		return ok && info.Library.Tagged > 0 && sawPath
	})
	resp, err := http.Post("http://"+addr+"/api/v1/workers/pause", "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("pause: %v %v", err, resp)
	}
	paused := time.Now()
	eventually.True(t, 5*time.Second, "every worker paused with no job", func() bool {
		info, _ = getInfo(t, addr)
		for _, w := range info.Workers {
			if w.Phase != "paused" || w.Status != "healthy" {
				return false
			}
		}
		return !info.WorkerEnabled && info.Library.Claimed == 0
	})
	t.Logf("paused within %s", time.Since(paused).Round(10*time.Millisecond))
	frozen := info.Library.Tagged
	// A pause shows as the absence of progress, over a span of the real
	// clock in which the workers would tag several files.
	time.Sleep(1500 * time.Millisecond)
	if info, _ = getInfo(t, addr); info.Library.Tagged != frozen {
		t.Errorf("tagging went on while paused: %d → %d", frozen, info.Library.Tagged)
	}
	if frozen == info.Library.Total {
		t.Fatal("the library was done before the pause; the test proves nothing")
	}
	resp, err = http.Post("http://"+addr+"/api/v1/workers/resume", "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("resume: %v %v", err, resp)
	}
	resumed := time.Now()
	eventually.True(t, 2*time.Second, "work to resume", func() bool {
		info, _ = getInfo(t, addr)
		return info.Library.Claimed > 0 || info.Library.Tagged > frozen
	})
	t.Logf("resumed within %s", time.Since(resumed).Round(10*time.Millisecond))
	eventually.True(t, 30*time.Second, "the whole library", func() bool {
		info, _ = getInfo(t, addr)
		return info.Library.Tagged == info.Library.Total
	})
	// Ctrl-C on a terminal signals the whole foreground process group: the
	// workers, in their own groups, must not get it; the supervisor stops
	// them gracefully (SIGTERM, exit 0).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGINT\n%s", err, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop within 15 s of SIGINT")
	}
	graceful := 0
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.Contains(l, `msg="worker exiting"`) && strings.Contains(l, "code=0") && strings.Contains(l, `reason="stop requested"`) {
			graceful++
		}
	}
	if graceful != 2 {
		t.Errorf("want both workers to exit 0 on the supervisor's stop request, got %d\n%s", graceful, errb.String())
	}
}

// A store that cannot be opened is service_down: workers are unhealthy
// (not started until the restart state can be read, or backing off), never
// restarted for it and never failed; the API still shows them.
func TestUnreachableStoreIsNotACrashLoop(t *testing.T) {
	data := t.TempDir()
	blocker := filepath.Join(data, "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	t.Run("sqlite", func(t *testing.T) { unreachable(t, data, "sqlite:"+filepath.Join(blocker, "nomarr.db")) })
	t.Run("arangodb", func(t *testing.T) { unreachable(t, data, "arangodb://nomarr:s3cret-pw@127.0.0.1:1/nomarr") })
}

func unreachable(t *testing.T, data, db string) {
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve", "--data-dir", data, "--db", db,
		"--http-addr", addr, "--workers", "2", "--analyzer", "noop", "--frame-interval", "200ms", "--stale-after", "1s",
		"--hang-after", "3s", "--check-interval", "100ms", "--breaker-cooldown", "2s")
	var errb syncbuf.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var info struct {
		Store      string `json:"store"`
		StoreError string `json:"store_error"`
		Workers    []struct {
			Status, Phase string
			Restarts      int `json:"restarts"`
		} `json:"workers"`
	}
	eventually.True(t, 10*time.Second, "the API", func() bool {
		resp, err := http.Get("http://" + addr + "/api/v1/info")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&info) == nil && len(info.Workers) == 2
	})
	// A crash loop shows as restarts over time: 6 s of the real clock hold
	// several (a 2 s breaker cooldown, a frame every 200 ms).
	time.Sleep(6 * time.Second)
	resp, err := http.Get("http://" + addr + "/api/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if info.StoreError == "" {
		t.Error("info does not say the store is unavailable")
	}
	for _, w := range info.Workers {
		// Without its restart state the owner does not spawn the worker (a
		// crash loop must not escape its limits through a store outage).
		if w.Restarts != 0 || w.Status != "unhealthy" || (w.Phase != "" && w.Phase != "backing_off") {
			t.Errorf("worker %+v: want unhealthy, not started or backing off, never restarted\n%s", w, errb.String())
		}
	}
	if strings.Contains(errb.String(), "restart_scheduled") {
		t.Errorf("a restart was scheduled:\n%s", errb.String())
	}
	for _, where := range []string{errb.String(), info.Store, info.StoreError} {
		if strings.Contains(where, "s3cret-pw") {
			t.Errorf("the password leaked: %s", where)
		}
	}
}

// With gpu on, the supervisor probes nvidia-smi and writes gpu:health; a GPU
// that is down puts the workers in backing_off (unhealthy, never killed), and
// they recover once the probe succeeds again.
func TestGPUProbeDownAndUp(t *testing.T) {
	bin, data, addr := t.TempDir(), t.TempDir(), freeAddr(t)
	smi := filepath.Join(bin, "nvidia-smi")
	write := func(body string) {
		tmp := smi + ".tmp"
		if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, smi); err != nil {
			t.Fatal(err)
		}
	}
	write(`echo "No devices were found"; exit 9`)
	cmd := exec.Command(binary, "serve", "--data-dir", data, "--http-addr", addr, "--workers", "2", "--analyzer", "noop",
		"--gpu", "true", "--gpu-probe-interval", "500ms", "--frame-interval", "200ms", "--stale-after", "1s",
		"--hang-after", "3s", "--check-interval", "100ms", "--breaker-cooldown", "1s")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	var errb syncbuf.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	phases := func() (string, string) {
		resp, err := http.Get("http://" + addr + "/api/v1/info")
		if err != nil {
			return "", ""
		}
		defer resp.Body.Close()
		var info struct {
			Workers []struct{ Status, Phase string } `json:"workers"`
		}
		if json.NewDecoder(resp.Body).Decode(&info) != nil || len(info.Workers) != 2 {
			return "", ""
		}
		return info.Workers[0].Status + "/" + info.Workers[0].Phase, info.Workers[1].Status + "/" + info.Workers[1].Phase
	}
	eventually.True(t, 10*time.Second, "workers backing off while the GPU is down", func() bool {
		a, b := phases()
		return a == "unhealthy/backing_off" && b == "unhealthy/backing_off"
	})
	write(`echo "NVIDIA H100, 1 MiB, 81559 MiB"`)
	eventually.True(t, 10*time.Second, "workers healthy once the GPU is back", func() bool {
		a, b := phases()
		return a == "healthy/idle" && b == "healthy/idle"
	})
	if strings.Contains(errb.String(), "msg=kill") || strings.Contains(errb.String(), "restart_scheduled") {
		t.Errorf("a worker was killed or restarted for a GPU outage:\n%s", errb.String())
	}
}
