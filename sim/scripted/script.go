// Package scripted is an analyzer that plays a scenario's library in a real
// worker process, so that real-process drills reproduce simulated scenarios.
package scripted

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/core/worker"
	"github.com/nomarr/nomarr/sim"
)

// Script plays a scenario's library in a real worker process: each file takes
// its job_time (progress every 100 ms), a poison file kills the process with
// SIGKILL half-way through, a stall file stops progressing and never ends, and
// error files fail with their class. It is how real-process drills reproduce
// simulated scenarios.
type Script struct {
	Scenario *sim.Scenario
	// StateDir counts analyses per file across processes (for fail_times).
	StateDir string
}

// NewScript loads the library of a scenario file.
func NewScript(scenarioPath, stateDir string) (*Script, error) {
	sc, err := sim.Load(scenarioPath)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("analyzer: state dir: %w", err)
	}
	return &Script{Scenario: sc, StateDir: stateDir}, nil
}

// count records one more analysis of key and returns the total.
func (s *Script) count(key string) int {
	p := filepath.Join(s.StateDir, key+".runs")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		_, _ = f.Write([]byte{'x'})
		f.Close()
	}
	st, err := os.Stat(p)
	if err != nil {
		return 1
	}
	return int(st.Size())
}

// Analyze implements worker.Analyzer.
func (s *Script) Analyze(ctx context.Context, job worker.Job, progress func(int64)) worker.Result {
	spec := s.Scenario.Library.Overrides[job.FileKey]
	jt := s.Scenario.JobTime(job.FileKey)
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	run := func(d time.Duration, advance bool) bool {
		deadline := time.NewTimer(d)
		defer deadline.Stop()
		for {
			select {
			case <-deadline.C:
				return true
			case <-ctx.Done():
				return false
			case <-tick.C:
				if advance {
					progress(int64(time.Since(start) / (100 * time.Millisecond)))
				}
			}
		}
	}
	switch {
	case spec.Poison:
		run(jt/2, true)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught
	case spec.Stall:
		run(365*24*time.Hour, false)
		return worker.Result{Class: worker.Transient, Reason: "cancelled"}
	}
	if !run(jt, true) {
		return worker.Result{Class: worker.Transient, Reason: "cancelled"}
	}
	if r, failed := spec.Injected(s.count(job.FileKey)); failed {
		return r
	}
	// The production analyzer's last step writes into the file: only
	// while the claim holds (worker.Job.Fence).
	if err := job.Confirm(); err != nil {
		return worker.FenceFailed(err, "")
	}
	return worker.Result{Tags: map[string]string{"mood-strict": "happy"}, Version: "script-1"}
}
