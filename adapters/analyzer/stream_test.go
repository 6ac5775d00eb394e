//go:build cgo

package analyzer

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// realModels returns the MusiCNN models (../shared/models/musicnn or
// NOMARR_MODELS_DIR) on ONNX Runtime (.cache/onnxruntime or
// NOMARR_ONNXRUNTIME_LIB), loaded, on one thread.
func realModels(t *testing.T, batch int) *inference.Models {
	t.Helper()
	lib := os.Getenv("NOMARR_ONNXRUNTIME_LIB")
	if lib == "" {
		lib = "../../.cache/onnxruntime/libonnxruntime.so.1"
	}
	dir := os.Getenv("NOMARR_MODELS_DIR")
	if dir == "" {
		dir = "../../../shared/models/musicnn"
	}
	for _, p := range []string{lib, filepath.Join(dir, inference.BackboneFile)} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make deps`, or set NOMARR_ONNXRUNTIME_LIB and NOMARR_MODELS_DIR", err)
		}
	}
	m := inference.New(inference.Config{LibraryPath: lib, ModelsDir: dir, Threads: 1, BatchSize: batch})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Unload)
	return m
}

// sh runs a shell command line (sox, espeak-ng, ffmpeg) and fails the test
// when it fails.
func sh(t *testing.T, cmd string) {
	t.Helper()
	if out, err := exec.Command("bash", "-c", "set -euo pipefail; "+cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// speech writes about 10 s of speech at path (espeak-ng, WAV).
func speech(t *testing.T, path string) {
	t.Helper()
	sh(t, fmt.Sprintf(`espeak-ng -s 150 -w %q "The quick brown fox jumps over the lazy dog. `+
		`She sells sea shells by the sea shore, and the shells she sells are surely sea shells. `+
		`Peter Piper picked a peck of pickled peppers."`, path))
}

// The streamed analysis predicts every patch as a single Predict over the
// whole decoded track does (the analyzer before streaming), within 1e-5,
// and gives its track vector from a running sum, in four formats, with chunks of several batches and a last partial one.
func TestStreamedScoresEqualWholeTrack(t *testing.T) {
	models := realModels(t, 8)
	dir := t.TempDir()
	talk := filepath.Join(dir, "talk.wav")
	speech(t, talk)
	// 100 s: chord, noise and speech mixed, stereo 44.1 kHz.
	sh(t, fmt.Sprintf(`ffmpeg -v error -f lavfi -i "sine=f=220:d=100,volume=0.3" -f lavfi -i "anoisesrc=d=100:a=0.05:c=pink" `+
		`-stream_loop -1 -i %q -filter_complex "[2]aresample=44100,atrim=0:100[s];[0][1][s]amix=3,pan=stereo|c0=c0|c1=0.7*c0" -ar 44100 %q`,
		talk, filepath.Join(dir, "mix.wav")))
	for _, ext := range []string{"mp3", "flac", "ogg", "m4a"} {
		sh(t, fmt.Sprintf(`ffmpeg -v error -i %q %q`, filepath.Join(dir, "mix.wav"), filepath.Join(dir, "mix."+ext)))
	}
	m := &MusiCNN{Models: models, Tags: tags.DefaultOptions(), WriteMode: tags.ModeNone}
	for _, ext := range []string{"mp3", "flac", "ogg", "m4a"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(dir, "mix."+ext)
			// Before: ffmpeg's samples, every patch at once, one Predict.
			samples, err := audio.Decode(context.Background(), path, audio.Options{Decoder: audio.DecoderFFmpeg})
			if err != nil {
				t.Fatal(err)
			}
			patches, n := features.NewExtractor().AppendPatches(nil, samples)
			want, err := models.Predict(patches, n)
			if err != nil {
				t.Fatal(err)
			}
			var step int64
			got, err := m.analyzeStream(context.Background(), path, func(int64) {}, &step,
				func() (map[string]string, *worker.Result) { return nil, nil })
			if err != nil {
				t.Fatal(err)
			}
			if got.patches != n || len(got.pred.MSD) != n || n <= models.ChunkPatches() {
				t.Fatalf("%d patches streamed (%d rows), %d whole; chunk %d", got.patches, len(got.pred.MSD), n, models.ChunkPatches())
			}
			worst := maxDiff(want.MSD, got.pred.MSD)
			for _, h := range tags.Heads {
				worst = max(worst, maxDiff(want.Heads[h], got.pred.Heads[h]))
			}
			if worst > 1e-5 {
				t.Errorf("largest score difference %g, want ≤ 1e-5", worst)
			}
			wantTags, err := tags.Derive(want, "v", tags.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			gotTags, err := tags.Derive(got.pred, "v", tags.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			for k, w := range wantTags {
				a, errA := strconv.ParseFloat(w, 64)
				b, errB := strconv.ParseFloat(gotTags[k], 64)
				if errA == nil && (errB != nil || math.Abs(a-b) > 1.01e-4) || errA != nil && w != gotTags[k] {
					t.Errorf("%s = %q streamed, %q whole", k, gotTags[k], w)
				}
			}
			wantVec, err := tags.TrackVector(want)
			if err != nil {
				t.Fatal(err)
			}
			gotVec, err := tags.TrackVector(got.pred)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff([][]float32{wantVec}, [][]float32{gotVec}); d > 1e-5 {
				t.Errorf("track vector differs by %g streamed", d)
			}
			t.Logf("%d patches, largest score difference %g", n, worst)
		})
	}
}

func maxDiff(a, b [][]float32) float64 {
	var d float64
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}

// longSeconds is the length of TestLongFileAnalysedWhole's file:
// NOMARR_LONG_SECONDS (7200 for the two-hour case), default 300.
func longSeconds(t *testing.T) int {
	if s := os.Getenv("NOMARR_LONG_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 60 {
			t.Fatalf("NOMARR_LONG_SECONDS=%q: want a whole number of seconds ≥ 60", s)
		}
		return n
	}
	return 300
}

// A long file is analysed whole, its Go heap bounded whatever its length:
// its first half is a chord, its second half speech, and the voice score
// of the whole lies well above that of its first half alone (the same
// file with MaxSeconds at the half), as the mean of both halves should.
func TestLongFileAnalysedWhole(t *testing.T) {
	secs := longSeconds(t)
	half := secs / 2
	dir := t.TempDir()
	talk := filepath.Join(dir, "talk.wav")
	speech(t, talk)
	long := filepath.Join(dir, "long.flac")
	sh(t, fmt.Sprintf(`ffmpeg -v error -f lavfi -i "sine=f=196:d=%d,volume=0.3" -f lavfi -i "sine=f=247:d=%d,volume=0.3" `+
		`-stream_loop -1 -i %q -filter_complex "[0][1]amix=2[c];[2]aresample=16000,atrim=0:%d[s];[c]aresample=16000[c16];[c16][s]concat=n=2:v=0:a=1" `+
		`-ar 16000 -ac 1 -compression_level 0 %q`, half, half, talk, secs-half, long))

	models := realModels(t, 8)
	voice := tags.ClassKey("voice_instrumental", "voice")
	analyze := func(maxSeconds float64) (score float64, peakHeap uint64) {
		m := &MusiCNN{Models: models, Tags: tags.DefaultOptions(), WriteMode: tags.ModeNone,
			Audio: audio.Options{MaxSeconds: maxSeconds}}
		var ms runtime.MemStats
		runtime.GC()
		steps := 0
		r := m.Analyze(context.Background(), worker.Job{Path: long}, func(int64) {
			steps++
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapAlloc)
		})
		if r.Class != worker.OK {
			t.Fatalf("MaxSeconds %v: %+v", maxSeconds, r)
		}
		if min := int(maxSeconds) / 9; maxSeconds > 0 && steps < min {
			t.Errorf("%d progress reports for %v s of audio, want ≥ %d", steps, maxSeconds, min)
		}
		score, err := strconv.ParseFloat(r.Tags[voice], 64)
		if err != nil {
			t.Fatalf("%s = %q", voice, r.Tags[voice])
		}
		return score, peakHeap
	}
	whole, heap := analyze(0)
	first, _ := analyze(float64(half))
	t.Logf("%d s: voice %.4f whole, %.4f first half; Go heap peak %.1f MiB; %s",
		secs, whole, first, float64(heap)/(1<<20), vmHWM())
	if whole < first+0.2 {
		t.Errorf("voice %.4f over the whole file, %.4f over its first half: the speech of the second half does not count", whole, first)
	}
	// Scores grow by 512 bytes a patch (1.5 s); all else is bounded.
	if limit := uint64(48<<20) + uint64(secs)*400; heap > limit {
		t.Errorf("Go heap peaked at %d MiB, want ≤ %d", heap>>20, limit>>20)
	}
}

// vmHWM is the process's peak resident set (Linux), for the log.
func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return "process " + strings.Join(strings.Fields(l), " ")
		}
	}
	return ""
}
