//go:build !cgo

package inference

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// This file stands in for onnx.go in a build without cgo: everything that
// needs ONNX Runtime fails with ErrNoCgo (worker.ServiceDown for the gpu
// dependency); Version works.

// Init fails: ONNX Runtime needs cgo.
func Init(libPath string) error { return ErrNoCgo }

// RuntimeVersion is "" without cgo.
func RuntimeVersion() string { return "" }

// Models is the model cache (worker.Models); without cgo it cannot load.
type Models struct{ cfg Config }

var _ worker.Models = (*Models)(nil)

// New returns unloaded Models for cfg (defaults filled in).
func New(cfg Config) *Models { return &Models{cfg: cfg.withDefaults()} }

// Load fails with ErrNoCgo.
func (m *Models) Load(ctx context.Context) error { return ErrNoCgo }

// Unload does nothing.
func (m *Models) Unload() {}

// Loaded is false.
func (m *Models) Loaded() bool { return false }

// Provider is "".
func (m *Models) Provider() string { return "" }

// Fallbacks is 0.
func (m *Models) Fallbacks() int { return 0 }

// FellBack is false.
func (m *Models) FellBack() bool { return false }

// Changed is false.
func (m *Models) Changed() bool { return false }

// Version is the model-set version of the files in ModelsDir.
func (m *Models) Version() string {
	v, _ := Version(m.cfg.ModelsDir)
	return v
}

// Predict fails with ErrNoCgo.
func (m *Models) Predict(patches []float32, n int) (tags.Predictions, error) {
	if n < 0 || len(patches) != n*PatchSize {
		return tags.Predictions{}, fmt.Errorf("inference: predict: %d values for %d patches, want %d", len(patches), n, n*PatchSize)
	}
	return tags.Predictions{}, ErrNoCgo
}
