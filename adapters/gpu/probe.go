// Package gpu probes the GPU for the supervisor's `gpu:health` value
// (docs/design.md §8; core/gpu decides what the readings mean): Probe runs
// nvidia-smi and summarizes the GPUs it lists. It stays apart from the
// model runner (adapters/inference), which runs on the CPU unless told to
// use CUDA and needs no GPU: the supervising process probes the GPU while
// its workers run the models, and the probe needs neither cgo nor ONNX
// Runtime.
package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	coregpu "github.com/nomarr/nomarr/core/gpu"
)

// probeArgs are nvidia-smi's arguments: one CSV line per GPU.
var probeArgs = []string{"--query-gpu=name,memory.used,memory.total", "--format=csv,noheader"}

// maxProbeOutput bounds what Probe keeps of nvidia-smi's output.
const maxProbeOutput = 64 << 10

// Probe asks nvidia-smi (nvidiaSMI: its path or name, "" = "nvidia-smi" on
// PATH) for the GPUs, within timeout (≤ 0: core/gpu.ProbeTimeout). It is ok
// when nvidia-smi exits 0 and lists at least one GPU; the reason then
// summarizes the GPUs ("1 GPU: NVIDIA H100 80GB HBM3 (1 MiB / 81559 MiB)").
// Otherwise — not found, non-zero exit, no GPU line, timeout, ctx done — it is
// not ok and the reason says why. nvidia-smi runs in a process group of its
// own, killed whole on timeout, so Probe returns within about the timeout and
// leaves no process behind.
func Probe(ctx context.Context, nvidiaSMI string, timeout time.Duration) (ok bool, reason string) {
	if nvidiaSMI == "" {
		nvidiaSMI = "nvidia-smi"
	}
	if timeout <= 0 {
		timeout = coregpu.ProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, nvidiaSMI, probeArgs...)
	var out capped
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Output pipes held open by an orphan cannot block Wait for long.
	cmd.WaitDelay = 500 * time.Millisecond
	err := cmd.Run()
	msg := firstLine(out.String())
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return false, fmt.Sprintf("nvidia-smi timed out after %s", timeout)
	case ctx.Err() != nil:
		return false, "gpu probe canceled"
	case errors.Is(err, exec.ErrNotFound):
		return false, fmt.Sprintf("nvidia-smi not found (%s)", nvidiaSMI)
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Exited() {
			if msg == "" {
				return false, fmt.Sprintf("nvidia-smi exited %d", exit.ExitCode())
			}
			return false, fmt.Sprintf("nvidia-smi exited %d: %s", exit.ExitCode(), msg)
		}
		return false, fmt.Sprintf("nvidia-smi: %v", err)
	}
	gpus := parseGPUs(out.String())
	if len(gpus) == 0 {
		if msg == "" {
			return false, "nvidia-smi listed no GPU"
		}
		return false, "nvidia-smi listed no GPU: " + msg
	}
	noun := "GPU"
	if len(gpus) > 1 {
		noun = "GPUs"
	}
	return true, fmt.Sprintf("%d %s: %s", len(gpus), noun, strings.Join(gpus, "; "))
}

// parseGPUs reads nvidia-smi's CSV lines "name, used MiB, total MiB" as
// "name (used / total)".
func parseGPUs(out string) []string {
	var gpus []string
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) != 3 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[0] == "" {
			continue
		}
		gpus = append(gpus, fmt.Sprintf("%s (%s / %s)", f[0], f[1], f[2]))
	}
	return gpus
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// capped is a buffer that keeps the first maxProbeOutput bytes.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxProbeOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
