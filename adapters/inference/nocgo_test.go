//go:build !cgo

package inference

import (
	"context"
	"errors"
	"testing"

	"github.com/nomarr/nomarr/core/worker"
)

// Without cgo the models cannot run: every entry point says so, as a
// ServiceDown of the gpu dependency. (The model tests need cgo.)
func TestNoCgo(t *testing.T) {
	m := New(Config{})
	for _, err := range []error{Init("x"), m.Load(context.Background())} {
		if !errors.Is(err, ErrNoCgo) {
			t.Errorf("error %v, want ErrNoCgo", err)
		}
		if c, dep := Classify(err); c != worker.ServiceDown || dep != worker.DepGPU {
			t.Errorf("Classify = %q, %q", c, dep)
		}
	}
	if _, err := m.Predict(make([]float32, PatchSize), 1); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Predict: %v", err)
	}
	m.Unload()
}
