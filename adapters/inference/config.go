// Package inference is the model adapter of the tagging job (docs/design.md §9
// step 3): it runs Essentia's MusiCNN models, exported to ONNX, through ONNX
// Runtime (github.com/yalue/onnxruntime_go, which loads libonnxruntime.so at
// run time — scripts/fetch-ort.sh fetches it), on the CPU unless
// Config.UseCUDA. The backbone runs as adapters/onnx/rewrite rewrites it at
// load time, its front end once per frame of a track (split.go). The GPU's
// health probe (nvidia-smi) is adapters/gpu's.
//
// Models (worker.Models) holds one session for the backbone and one per head:
//
//	msd-musicnn-1.onnx:             melspectrogram [n,187,96] → activations [n,50], embeddings [n,200]
//	<head>-msd-musicnn-1.onnx (×9): embeddings [n,200] → activations [n,2]
//
// The backbone's activations end in a Sigmoid (independent tag scores, each
// in [0,1]); every head ends in a Softmax (its two class scores sum to 1).
//
// The ONNX part needs cgo; a binary built with CGO_ENABLED=0 compiles, but
// Init and Models.Load fail with ErrNoCgo.
//
// Errors: Classify maps a Load or Predict error to the worker's error class —
// a missing or unloadable library or model file (and a build without cgo) is
// worker.ServiceDown for worker.DepGPU (nothing a retry of the file can fix);
// any other failure (a Run that failed on the CPU, including after the CUDA →
// CPU retry) is worker.Transient.
package inference

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nomarr/nomarr/core/tags"
)

// Model geometry (docs/design.md §9).
const (
	// PatchFrames and MelBands are the shape of one backbone input patch.
	PatchFrames = 187
	MelBands    = 96
	// PatchHop is the number of frames between the starts of consecutive
	// patches of a track (they share PatchFrames−PatchHop frames).
	PatchHop = 93
	// PatchSize is the number of float32 values of one patch.
	PatchSize = PatchFrames * MelBands
	// MSDClasses is the width of the backbone's activations.
	MSDClasses = 50
	// EmbeddingSize is the width of the backbone's embeddings (heads' input).
	EmbeddingSize = 200
	// HeadClasses is the width of each head's activations.
	HeadClasses = 2
)

// Execution providers as reported by Models.Provider.
const (
	ProviderCPU  = "cpu"
	ProviderCUDA = "cuda"
)

// Defaults of Config.
const (
	DefaultThreads   = 1
	DefaultBatchSize = 64
)

// BackboneFile is the backbone's file name inside Config.ModelsDir.
const BackboneFile = "msd-musicnn-1.onnx"

// HeadFile is the file name of head stem (e.g. "mood_happy").
func HeadFile(head string) string { return head + "-msd-musicnn-1.onnx" }

// ModelFiles are the model file names in the fixed order Version hashes them:
// the backbone, then the heads in tags.Heads order.
func ModelFiles() []string {
	files := []string{BackboneFile}
	for _, h := range tags.Heads {
		files = append(files, HeadFile(h))
	}
	return files
}

// Config configures Models.
type Config struct {
	// LibraryPath is the path of libonnxruntime.so.1 (config key
	// onnxruntime_lib, env NOMARR_ONNXRUNTIME_LIB).
	LibraryPath string
	// ModelsDir holds the ONNX files of ModelFiles (config key models_dir).
	ModelsDir string
	// Threads is ONNX Runtime's intra-op thread count; ≤ 0 means
	// DefaultThreads.
	Threads int
	// UseCUDA tries the CUDA execution provider; when it is unavailable the
	// sessions run on the CPU and a warning is logged.
	UseCUDA bool
	// BatchSize is the number of patches per Run; ≤ 0 means
	// DefaultBatchSize. The peak memory of a Run grows with it (on the CPU,
	// process peak ≈ 0.6 GiB at 64, ≈ 0.3 GiB at 8), while CPU throughput
	// hardly does: CPU-only workers do well with 8–16.
	BatchSize int
	// CPUArena keeps ONNX Runtime's CPU memory arena: the intermediates of a
	// Run are reused by the next instead of going back to the allocator —
	// 10–30 % faster on the CPU (BenchmarkPredict), at the price of holding the largest Run's
	// memory while the models are loaded (≈ 80 MiB more at batch 8, several
	// hundred at 64). Config key ort_cpu_arena (default true).
	CPUArena bool
	// PlainGraph runs the backbone as exported, without the load-time
	// rewrite (adapters/onnx/rewrite; same scores within float rounding,
	// ≈ 2× the CPU time); for comparisons and as a way around a rewrite
	// problem.
	PlainGraph bool
	// ProfilePrefix, when set, makes ONNX Runtime record the time of
	// every node of every Run in a JSON file per session, named from this
	// prefix, written when the sessions are destroyed (Unload); for
	// measurements (bench/pipeline -ort-profile), not for production.
	ProfilePrefix string
	// Logger receives warnings (CUDA unavailable, CPU fallback); nil means
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Threads <= 0 {
		c.Threads = DefaultThreads
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// readModel reads one model file, with a missing-model error naming the file
// and the models_dir key.
func readModel(dir, name string) ([]byte, error) {
	if dir == "" {
		return nil, &missingError{kind: ErrModelNotFound,
			msg: fmt.Sprintf("inference: models_dir is not set; it must name the directory holding %s and the heads", name)}
	}
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &missingError{kind: ErrModelNotFound,
			msg: fmt.Sprintf("inference: model file %s cannot be read (models_dir = %q): %v", path, dir, err)}
	}
	return b, nil
}

// filesStamp describes the model files in dir as the file system has them
// (inode, size, modification time; through symbolic links): a file
// replaced (a rename over it, a link retargeted) or rewritten gives
// another description, so a stamp taken before the files are read tells
// whether they changed since (Models.Changed) without reading them. A
// file that cannot be looked at is described as such.
func filesStamp(dir string) string {
	var b strings.Builder
	for _, name := range ModelFiles() {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", name)
			continue
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = uint64(st.Ino)
		}
		fmt.Fprintf(&b, "%s:%d:%d:%d;", name, ino, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

// Version is the model-set version (nom_version): the first 12 hex digits of
// the sha256 of the bytes of ModelFiles in dir, concatenated in that order.
func Version(dir string) (string, error) {
	h := sha256.New()
	for _, name := range ModelFiles() {
		b, err := readModel(dir, name)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// versionOf is Version over model bytes already read, in ModelFiles order.
func versionOf(blobs [][]byte) string {
	h := sha256.New()
	for _, b := range blobs {
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
