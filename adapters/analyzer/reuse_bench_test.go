package analyzer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// BenchmarkReuse measures, side by side in one run, a job on a 30 s FLAC
// track that already holds this model set's tags: with reuse_file_tags off
// (decode, features, inference; the write finds nothing to change) and on
// (decode and features only). x-realtime is seconds of audio per second.
//
//	go test -run '^$' -bench Reuse -benchtime 5x -cpu 1 ./adapters/analyzer
//
// It needs the ONNX Runtime library (`make deps`, or NOMARR_ONNXRUNTIME_LIB)
// and the models (../shared/models/musicnn, or NOMARR_MODELS_DIR).
func BenchmarkReuse(b *testing.B) {
	lib, models := benchAsset(b, "NOMARR_ONNXRUNTIME_LIB", filepath.Join("..", "..", ".cache", "onnxruntime", "libonnxruntime.so.1"), "run `make deps`"),
		benchAsset(b, "NOMARR_MODELS_DIR", filepath.Join("..", "..", "..", "shared", "models", "musicnn"), "put the shared folder beside the checkout")
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		b.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	if err := inference.Init(lib); err != nil {
		b.Fatal(err)
	}
	m := inference.New(inference.Config{LibraryPath: lib, ModelsDir: models, Threads: 1, BatchSize: 8, CPUArena: true})
	if err := m.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer m.Unload()
	const seconds = 30
	p := filepath.Join(b.TempDir(), "track.flac")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:duration=%d", seconds),
		"-f", "lavfi", "-i", fmt.Sprintf("anoisesrc=d=%d:a=0.05", seconds), "-filter_complex", "amix=inputs=2", p).CombinedOutput(); err != nil {
		b.Fatalf("make track.flac: %v %s", err, out)
	}
	job := worker.Job{FileKey: "k", Path: p, Fence: func() error { return nil }}
	analyze := func(reuse bool) worker.Result {
		a := &MusiCNN{Models: m, Tags: tags.DefaultOptions(), WriteMode: tags.ModeFull, ReuseFileTags: reuse}
		return a.Analyze(context.Background(), job, func(int64) {})
	}
	if r := analyze(false); r.Class != worker.OK { // tags the file
		b.Fatalf("first analysis: %+v", r)
	}
	for _, reuse := range []bool{false, true} {
		b.Run(fmt.Sprintf("reuse=%v", reuse), func(b *testing.B) {
			start := time.Now()
			for range b.N {
				if r := analyze(reuse); r.Class != worker.OK {
					b.Fatalf("%+v", r)
				}
			}
			b.ReportMetric(float64(seconds*b.N)/time.Since(start).Seconds(), "x-realtime")
		})
	}
}

// benchAsset is the path in env, else def when it exists; it skips the
// benchmark, saying how to get it, when neither is there.
func benchAsset(b *testing.B, env, def, how string) string {
	b.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = def
	}
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s not found (%v): %s, or set %s", p, err, how, env)
	}
	return p
}
