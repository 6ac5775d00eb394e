package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/config"
)

// TestTagRefusesMoreWorkersThanTheHostRuns guards that `nomarr tag` with
// workers: 1000 exits 2 on this host, naming the bound, before it scans:
// 1000 workers on 2 CPUs spawned 944 processes and lost 989 to the
// startup timeout. DIR is empty, so that a tag that went on would find
// nothing to tag and start no worker.
func TestTagRefusesMoreWorkersThanTheHostRuns(t *testing.T) {
	lib, data := t.TempDir(), t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"tag", lib, "--workers", "1000", "--analyzer", "noop", "--data-dir", data}, &out, &errb)
	msg := errb.String()
	if code != exitUsage || !strings.Contains(msg, "workers 1000 is too many for this host's") || !strings.Contains(msg, "at most ") {
		t.Fatalf("tag --workers 1000: exit %d, stderr %q; want 2 and the bound", code, msg)
	}
	h := config.HostResources()
	if cpuBound := config.WorkersPerCPU * h.CPUs; h.MemAvailable/config.WorkerMemory >= uint64(cpuBound) &&
		!strings.Contains(msg, fmt.Sprintf("%d CPUs: at most %d,", h.CPUs, cpuBound)) {
		t.Errorf("stderr %q does not name the CPU bound %d (%d CPUs)", msg, cpuBound, h.CPUs)
	}
	if strings.Contains(msg, "found ") || strings.Contains(out.String(), "nothing to tag") {
		t.Errorf("tag went on after refusing the worker count: %s%s", out.String(), msg)
	}
}

// TestTagWarnsAboveTheCPUCount guards that a worker count above the CPUs
// but within the bound is logged as a warning and runs: GOMAXPROCS=1
// makes this host one CPU for the binary, so 2 workers are one over it.
func TestTagWarnsAboveTheCPUCount(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	audioFiles(t, lib, "a.mp3", "b.flac")
	cmd := exec.Command(bin, "tag", lib, "--workers", "2", "--analyzer", "noop", "--data-dir", data)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || !strings.Contains(stdout.String(), "tagged 2, failed 0, pending 0") {
		t.Fatalf("tag --workers 2 on 1 CPU: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), "workers 2 is more than this host's 1 CPU:") {
		t.Errorf("no warning of 2 workers on 1 CPU:\n%s", stderr.String())
	}
}
