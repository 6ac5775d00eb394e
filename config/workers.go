package config

import (
	"fmt"
	"strings"
)

// WorkersPerCPU bounds workers per CPU. With ort_threads 1 a worker keeps
// at most one CPU busy with inference (plus its ffmpeg decode): past the
// CPU count workers only share CPUs, which pays while some wait on I/O (a
// network library, tag writes, the store), hence room up to four per CPU.
// Past that no workload gains, and a start of all of them at once starves
// each one's first frame past startup_timeout (1000 workers on 2 CPUs:
// 989 startup kills).
const WorkersPerCPU = 4

// WorkerMemory is the memory budgeted per worker, in bytes (256 MiB): each
// worker process loads the models itself, and its peak RSS on the CPU path
// is 156–167 MiB (docs/benchmarks.md), with room for the ffmpeg it runs and
// the main process.
const WorkerMemory = 256 << 20

// CheckWorkers judges a worker count against a host of cpus CPUs with
// memAvailable bytes of memory available. It refuses more than
// WorkersPerCPU×cpus workers and more than memAvailable/WorkerMemory (but
// always allows one); more workers than CPUs is allowed with a warning to
// log. cpus < 1 or memAvailable 0 means unknown: that bound is skipped.
// The error names the bound and why; the warning is empty when there is
// none. It reads nothing: HostResources reads the host.
func CheckWorkers(workers, cpus int, memAvailable uint64) (warning string, err error) {
	if workers < 1 {
		return "", fmt.Errorf("config: workers must be at least 1, got %d", workers)
	}
	var warnings []string
	if cpus >= 1 && workers > cpus {
		warnings = append(warnings, fmt.Sprintf("workers %d is more than this host's %s: "+
			"past the CPU count workers share CPUs, adding memory but little throughput", workers, cpuCount(cpus)))
	}
	memBound := -1 // no memory bound
	if memAvailable > 0 {
		memBound = int(min(memAvailable/WorkerMemory, MaxWorkers))
		if memBound < 1 {
			memBound = 1
			warnings = append(warnings, fmt.Sprintf("%s of memory available is under one worker's %s: "+
				"the worker may run out of memory", mib(memAvailable), mib(WorkerMemory)))
		}
	}
	cpuBound := -1
	if cpus >= 1 {
		cpuBound = WorkersPerCPU * cpus
	}
	switch {
	case memBound >= 0 && workers > memBound && (cpuBound < 0 || memBound <= cpuBound):
		return "", fmt.Errorf("config: workers %d is too many for this host's memory: at most %d, "+
			"%s available at %s per worker (each worker loads the models)",
			workers, memBound, mib(memAvailable), mib(WorkerMemory))
	case cpuBound >= 0 && workers > cpuBound:
		return "", fmt.Errorf("config: workers %d is too many for this host's %s: at most %d, "+
			"%d per CPU (past that workers only wait for a CPU, and starting them all at once outruns startup_timeout)",
			workers, cpuCount(cpus), cpuBound, WorkersPerCPU)
	}
	return strings.Join(warnings, "; "), nil
}

// cpuCount writes n CPUs, singular for one.
func cpuCount(n int) string {
	if n == 1 {
		return "1 CPU"
	}
	return fmt.Sprintf("%d CPUs", n)
}

// mib writes a byte count in MiB, or GiB from 10 GiB up.
func mib(b uint64) string {
	if b >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", b>>20)
}
