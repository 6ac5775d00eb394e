//go:build cgo

package rewrite

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

// The tests that run a rewritten graph load ONNX Runtime themselves (the
// package that runs the models, adapters/inference, depends on this one):
// NOMARR_ONNXRUNTIME_LIB, else <module root>/.cache/onnxruntime (make deps
// fetches it there). When it cannot be loaded they fail with the reason.
var (
	runtimeOnce sync.Once
	runtimeErr  error
)

// initRuntime loads ONNX Runtime once per test binary.
func initRuntime(tb testing.TB) {
	tb.Helper()
	runtimeOnce.Do(func() {
		lib := os.Getenv("NOMARR_ONNXRUNTIME_LIB")
		if lib == "" {
			lib = filepath.Join(moduleRoot(tb), ".cache", "onnxruntime", "libonnxruntime.so.1")
		}
		if _, err := os.Stat(lib); err != nil {
			runtimeErr = fmt.Errorf("ONNX Runtime library (run `make deps` or set NOMARR_ONNXRUNTIME_LIB): %w", err)
			return
		}
		ort.SetSharedLibraryPath(lib)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			runtimeErr = fmt.Errorf("load ONNX Runtime library %s: %w", lib, err)
		}
	})
	if runtimeErr != nil {
		tb.Fatal(runtimeErr)
	}
}

// runModel runs a model of one input x and one output y on the CPU.
func runModel(t *testing.T, data []byte, x []float32, xShape, yShape []int64) []float32 {
	t.Helper()
	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(data, []string{"x"}, []string{"y"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	in, err := ort.NewTensor(ort.NewShape(xShape...), x)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Destroy()
	out, err := ort.NewEmptyTensor[float32](ort.NewShape(yShape...))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Destroy()
	if err := s.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out.GetData()...)
}

// The constant channels of dead filters, taken out of the next 1-D
// convolution and added back as a constant of the patch, give that
// convolution's output within float32 rounding: the constants through Relu
// and BatchNormalization, and the taps that read the zero padding at the
// patch's edges.
func TestFoldConstantInputs(t *testing.T) {
	initRuntime(t)
	const frames = 12
	plain := constantInputsModel(t, frames)
	folded := constantInputsModel(t, frames)
	if n := foldConstantInputs(folded.Graph, frames, deadWeight); n != 1 {
		t.Fatalf("folded %d convolutions, want 1", n)
	}
	if k := folded.Graph.InitializerFloats("y/varying_kernel"); len(k) != 5*4*3 {
		t.Fatalf("folded kernel has %d weights, want 5 filters × 4 varying channels × 3 taps", len(k))
	}
	x := make([]float32, 2*frames)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	shape, yShape := []int64{1, 2, frames}, []int64{1, 5, frames}
	want := runModel(t, plain.Marshal(), x, shape, yShape)
	got := runModel(t, folded.Marshal(), x, shape, yShape)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("y[%d] = %g folded, %g as built (difference %.3g)", i, got[i], want[i], d)
		}
	}
}
