package config

import (
	"strings"
	"testing"
)

// TestCheckWorkersCPUBounds guards the worker count against the host's
// CPUs: up to the CPU count is quiet, above it a warning, above
// WorkersPerCPU per CPU an error saying the bound and why (workers: 1000
// on 2 CPUs spawned 944 workers, 989 killed by startup_timeout).
func TestCheckWorkersCPUBounds(t *testing.T) {
	for _, c := range []struct {
		workers, cpus int
		warn          bool
		err           string
	}{
		{1, 2, false, ""},
		{2, 2, false, ""},         // at the CPU count
		{3, 2, true, ""},          // one over: a warning
		{8, 2, true, ""},          // at WorkersPerCPU per CPU
		{9, 2, true, "at most 8"}, // one over: refused
		{1000, 2, true, "at most 8"},
		{64, 16, true, ""},
		{65, 16, true, "at most 64"},
		{1000, 0, false, ""}, // CPU count unknown: no CPU bound
	} {
		warn, err := CheckWorkers(c.workers, c.cpus, 0)
		if c.err == "" && err != nil {
			t.Errorf("workers %d on %d CPUs: %v, want no error", c.workers, c.cpus, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) ||
			!strings.Contains(err.Error(), "workers") || !strings.Contains(err.Error(), "per CPU")) {
			t.Errorf("workers %d on %d CPUs: %v, want an error naming workers, %q and the rule per CPU", c.workers, c.cpus, err, c.err)
		}
		if err == nil && (warn != "") != c.warn {
			t.Errorf("workers %d on %d CPUs: warning %q, want one: %v", c.workers, c.cpus, warn, c.warn)
		}
		if c.warn && err == nil && !strings.Contains(warn, "CPU") {
			t.Errorf("workers %d on %d CPUs: warning %q does not name the CPUs", c.workers, c.cpus, warn)
		}
	}
}

// TestCheckWorkersMemoryBound guards the worker count against the memory
// available: WorkerMemory per worker, the count that fits is allowed, one
// more is refused naming the bound; a host with memory for less than one
// worker still runs one, with a warning.
func TestCheckWorkersMemoryBound(t *testing.T) {
	const mib = 1 << 20
	five := uint64(5*WorkerMemory + 255*mib) // room for 5 workers, not 6
	for _, c := range []struct {
		workers int
		mem     uint64
		warn    bool
		err     string
	}{
		{5, five, false, ""},
		{6, five, false, "at most 5"},
		{1, 100 * mib, true, ""}, // under one worker's budget: run one, warn
		{2, 100 * mib, false, "at most 1"},
		{64, 0, true, ""}, // memory unknown: only the CPU bound
	} {
		warn, err := CheckWorkers(c.workers, 16, c.mem)
		if c.err == "" && err != nil {
			t.Errorf("workers %d, %d MiB available: %v, want no error", c.workers, c.mem/mib, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) ||
			!strings.Contains(err.Error(), "256 MiB") || !strings.Contains(err.Error(), "memory")) {
			t.Errorf("workers %d, %d MiB available: %v, want an error saying %q, memory and 256 MiB per worker",
				c.workers, c.mem/mib, err, c.err)
		}
		if err == nil && (warn != "") != c.warn {
			t.Errorf("workers %d, %d MiB available: warning %q, want one: %v", c.workers, c.mem/mib, warn, c.warn)
		}
	}
	// Both bounds bind: the smaller one is named.
	if _, err := CheckWorkers(9, 2, five); err == nil || !strings.Contains(err.Error(), "at most 5") {
		t.Errorf("workers 9 on 2 CPUs with memory for 5: %v, want the memory bound 5", err)
	}
	if _, err := CheckWorkers(7, 2, five); err == nil || !strings.Contains(err.Error(), "at most 5") {
		t.Errorf("workers 7 on 2 CPUs with memory for 5: %v, want the memory bound 5", err)
	}
	if _, err := CheckWorkers(0, 2, five); err == nil || !strings.Contains(err.Error(), "workers") {
		t.Errorf("workers 0: %v, want an error naming workers", err)
	}
}
