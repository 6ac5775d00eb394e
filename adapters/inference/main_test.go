//go:build cgo

package inference

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The model tests run the real models (NOMARR_MODELS_DIR, else
// <module root>/../shared/models/musicnn) on the CPU with the real library
// (NOMARR_ONNXRUNTIME_LIB, else <module root>/.cache/onnxruntime, fetched by
// scripts/fetch-ort.sh when absent). When either cannot be found the tests
// that need it fail with the reason; they are never skipped.
var (
	testLib, testModels       string
	testLibErr, testModelsErr error
)

func TestMain(m *testing.M) {
	root, err := moduleRoot()
	if err != nil {
		testLibErr, testModelsErr = err, err
	} else {
		testLib, testLibErr = findLibrary(root)
		testModels, testModelsErr = findModels(root)
	}
	os.Exit(m.Run())
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("inference tests: no go.mod above the package directory")
		}
		dir = parent
	}
}

func findLibrary(root string) (string, error) {
	if p := os.Getenv("NOMARR_ONNXRUNTIME_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("NOMARR_ONNXRUNTIME_LIB=%s: %w", p, err)
		}
		return p, nil
	}
	cache := filepath.Join(root, ".cache", "onnxruntime")
	lib := filepath.Join(cache, "libonnxruntime.so.1")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "fetch-ort.sh"), cache)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ONNX Runtime library not found at %s and scripts/fetch-ort.sh failed (%v): %s; "+
			"run `make deps` (scripts/fetch-ort.sh) or set NOMARR_ONNXRUNTIME_LIB", lib, err, strings.TrimSpace(stderr.String()))
	}
	got := strings.TrimSpace(stdout.String())
	if _, err := os.Stat(got); err != nil {
		return "", fmt.Errorf("scripts/fetch-ort.sh printed %q: %w", got, err)
	}
	return got, nil
}

func findModels(root string) (string, error) {
	dir := os.Getenv("NOMARR_MODELS_DIR")
	if dir == "" {
		dir = filepath.Join(root, "..", "shared", "models", "musicnn")
	}
	if _, err := os.Stat(filepath.Join(dir, BackboneFile)); err != nil {
		return "", fmt.Errorf("models not found (set NOMARR_MODELS_DIR): %w", err)
	}
	return filepath.Clean(dir), nil
}

// needLibrary fails the test when the library or the models are missing.
func needLibrary(tb testing.TB) {
	tb.Helper()
	if testLibErr != nil {
		tb.Fatalf("ONNX Runtime library: %v", testLibErr)
	}
	if testModelsErr != nil {
		tb.Fatalf("models: %v", testModelsErr)
	}
}

// testConfig is a CPU configuration of the real models.
func testConfig(tb testing.TB) Config {
	needLibrary(tb)
	return Config{LibraryPath: testLib, ModelsDir: testModels, Threads: 1, BatchSize: 64}
}

// loaded returns loaded Models for cfg, unloaded at the end of the test.
func loaded(tb testing.TB, cfg Config) *Models {
	tb.Helper()
	m := New(cfg)
	if err := m.Load(context.Background()); err != nil {
		tb.Fatalf("Load: %v", err)
	}
	tb.Cleanup(m.Unload)
	return m
}

// testPatches returns n deterministic patches with values in the range of
// log-compressed mel bands, log10(1+10000·x) ∈ [0, ~4], with some structure
// (a per-patch level and a per-band slope) so patches differ.
func testPatches(n int, seed uint64) []float32 {
	p := make([]float32, n*PatchSize)
	s := seed*0x9E3779B97F4A7C15 + 1
	next := func() float32 { // xorshift64*, uniform in [0,1)
		s ^= s >> 12
		s ^= s << 25
		s ^= s >> 27
		return float32((s*0x2545F4914F6CDD1D)>>40) / float32(1<<24)
	}
	for i := range n {
		level := 3 * next()
		for f := range PatchFrames {
			for b := range MelBands {
				slope := 1 - float32(b)/MelBands
				p[i*PatchSize+f*MelBands+b] = level*slope*0.7 + next()*0.8
			}
		}
	}
	return p
}
