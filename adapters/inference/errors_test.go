package inference

import (
	"context"
	"testing"

	"github.com/nomarr/nomarr/core/worker"
)

func TestClassifyKinds(t *testing.T) {
	for _, err := range []error{ErrLibraryNotFound, ErrLibraryLoad, ErrModelNotFound, ErrModelInvalid, ErrNoCgo,
		libraryNotFound("/x", nil)} {
		if c, dep := Classify(err); c != worker.ServiceDown || dep != worker.DepGPU {
			t.Errorf("Classify(%v) = %q, %q", err, c, dep)
		}
	}
	if c, _ := Classify(context.DeadlineExceeded); c != worker.Transient {
		t.Errorf("Classify(deadline) = %q", c)
	}
}
