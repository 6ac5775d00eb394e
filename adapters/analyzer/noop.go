// Package analyzer holds the non-ML implementations of the worker's Analyzer
// and Models ports: Noop (instant success; benchmarks of everything around
// the job) and Script (per-file job time, progress, crash, stall and errors
// from a scenario file; fault drills with real processes). The production
// analyzer is the ML pipeline.
package analyzer

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/worker"
)

// Noop tags every file at once with a fixed tag.
type Noop struct{}

// NoopVersion is the model-set version Noop records on the files it tags.
const NoopVersion = "noop"

// Analyze implements worker.Analyzer.
func (Noop) Analyze(_ context.Context, job worker.Job, progress func(int64)) worker.Result {
	progress(1)
	return worker.Result{Tags: map[string]string{"nom_noop": "1"}, Version: NoopVersion}
}

// Models is a model cache that takes LoadTime to load.
type Models struct {
	LoadTime time.Duration
	loaded   bool
}

// Load implements worker.Models.
func (m *Models) Load(ctx context.Context) error {
	if m.LoadTime > 0 {
		t := time.NewTimer(m.LoadTime)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.loaded = true
	return nil
}

// Unload implements worker.Models.
func (m *Models) Unload() { m.loaded = false }
