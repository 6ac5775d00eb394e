package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSMI writes an executable shell script standing in for nvidia-smi.
func fakeSMI(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProbeUp(t *testing.T) {
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	smi := fakeSMI(t, `echo "$@" > `+args+`
echo "NVIDIA H100 80GB HBM3, 1 MiB, 81559 MiB"`)
	ok, reason := Probe(context.Background(), smi, time.Second)
	if !ok || reason != "1 GPU: NVIDIA H100 80GB HBM3 (1 MiB / 81559 MiB)" {
		t.Errorf("Probe = %v, %q", ok, reason)
	}
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "--query-gpu=name,memory.used,memory.total --format=csv,noheader" {
		t.Errorf("nvidia-smi args = %q", got)
	}

	smi = fakeSMI(t, `printf 'GPU A, 10 MiB, 100 MiB\nGPU B, 20 MiB, 200 MiB\n'`)
	if ok, reason := Probe(context.Background(), smi, 0); !ok || reason != "2 GPUs: GPU A (10 MiB / 100 MiB); GPU B (20 MiB / 200 MiB)" {
		t.Errorf("Probe (2 GPUs, default timeout) = %v, %q", ok, reason)
	}
}

func TestProbeDown(t *testing.T) {
	for _, c := range []struct{ name, body, path, want string }{
		{"no devices", `echo "No devices were found"; exit 9`, "", "nvidia-smi exited 9: No devices were found"},
		{"no devices on stderr", `echo "No devices were found" >&2; exit 9`, "", "nvidia-smi exited 9: No devices were found"},
		{"silent failure", `exit 3`, "", "nvidia-smi exited 3"},
		{"no gpu line", `exit 0`, "", "nvidia-smi listed no GPU"},
		{"garbage", `echo "NVIDIA-SMI has failed"`, "", "nvidia-smi listed no GPU: NVIDIA-SMI has failed"},
		{"missing path", "", "/nonexistent/nvidia-smi", "nvidia-smi: fork/exec /nonexistent/nvidia-smi: no such file or directory"},
		{"not on PATH", "", "nomarr-no-such-nvidia-smi", "nvidia-smi not found (nomarr-no-such-nvidia-smi)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			smi := c.path
			if smi == "" {
				smi = fakeSMI(t, c.body)
			}
			ok, reason := Probe(context.Background(), smi, time.Second)
			if ok || reason != c.want {
				t.Errorf("Probe = %v, %q; want false, %q", ok, reason, c.want)
			}
		})
	}
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestProbeHang: an nvidia-smi that hangs (with a child holding its output
// open) is killed with its child at the timeout.
func TestProbeHang(t *testing.T) {
	dir := t.TempDir()
	smi := fakeSMI(t, `echo $$ > `+dir+`/pid
sleep 30 &
echo $! > `+dir+`/child
wait`)
	const timeout = time.Second
	start := time.Now()
	ok, reason := Probe(context.Background(), smi, timeout)
	took := time.Since(start)
	if ok || reason != "nvidia-smi timed out after 1s" {
		t.Errorf("Probe = %v, %q", ok, reason)
	}
	if took > timeout+time.Second {
		t.Errorf("Probe took %s, want ≤ %s", took, timeout+time.Second)
	}
	pids := []int{readPID(t, filepath.Join(dir, "pid")), readPID(t, filepath.Join(dir, "child"))}
	deadline := time.Now().Add(time.Second) // the kill is asynchronous
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d outlived the probe", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestProbeCanceled(t *testing.T) {
	smi := fakeSMI(t, `exec sleep 30`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	ok, reason := Probe(ctx, smi, 10*time.Second)
	if ok || reason != "gpu probe canceled" || time.Since(start) > 2*time.Second {
		t.Errorf("Probe = %v, %q after %s", ok, reason, time.Since(start))
	}
}
