//go:build cgo && !nolibav

package audio

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/worker"
)

// fuzzExts are the file names' extensions the fuzzer picks from (a
// demuxer's probe weighs the extension).
var fuzzExts = []string{"mp3", "flac", "ogg", "opus", "m4a", "wav", "aiff", "wma", "mka", "bin"}

// FuzzLibavDecode feeds the in-process decoder arbitrary files: whole,
// truncated and damaged files of every format of the test library, and
// garbage. Whatever the input, the decode returns (no crash, no hang past
// its timeout), and fails only with an *Error of the file's classes:
// Permanent, or Transient for a timeout — never ServiceDown, which would
// hold the decoder down for a file's fault.
func FuzzLibavDecode(f *testing.F) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		f.Fatalf("ffmpeg is not installed: %s", depsHint)
	}
	dir := f.TempDir()
	for i, ext := range fuzzExts[:8] {
		p := filepath.Join(dir, "seed."+ext)
		args := []string{"-v", "error", "-f", "lavfi", "-i", "sine=f=440:d=0.4", "-ac", "2"}
		if ext == "opus" {
			args = append(args, "-c:a", "libopus")
		}
		if out, err := exec.Command("ffmpeg", append(args, p)...).CombinedOutput(); err != nil {
			f.Fatalf("seed %s: %v\n%s", ext, err, out)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		e := uint8(i)
		f.Add(b, e)
		f.Add(b[:len(b)/2], e)
		f.Add(b[:min(len(b), 64)], e)
		damaged := append([]byte(nil), b...)
		for j := len(damaged) / 3; j < len(damaged)*2/3; j += 7 {
			damaged[j] ^= 0x5a
		}
		f.Add(damaged, e)
		f.Add(append(b[:min(len(b), 200):min(len(b), 200)], make([]byte, 4000)...), e)
	}
	f.Add([]byte("not audio at all \x00\xff\x13\x37"), uint8(0))
	f.Add([]byte{}, uint8(9))

	f.Fuzz(func(t *testing.T, data []byte, ext uint8) {
		p := filepath.Join(t.TempDir(), "f."+fuzzExts[int(ext)%len(fuzzExts)])
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n, err := Stream(ctx, p, Options{Decoder: DecoderLibav, MinSeconds: -1, Timeout: 10 * time.Second},
			func(block []float32) error {
				if len(block) == 0 {
					t.Fatal("empty block")
				}
				return nil
			})
		if err == nil {
			if n <= 0 {
				t.Fatalf("no error and %d samples", n)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v (%T) is not an *audio.Error", err, err)
		}
		if e.Class != worker.Permanent && e.Class != worker.Transient {
			t.Fatalf("class %s for a file's content: %v", e.Class, e)
		}
	})
}
