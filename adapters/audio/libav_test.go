//go:build cgo && !nolibav

package audio

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nomarr/nomarr/core/worker"
)

// extraFormats writes the chord in formats the test library lacks (WAV of
// several sample formats, AIFF, 5.1 FLAC, 8-bit and 24-bit, 48 kHz and
// 22.05 kHz), so the comparison covers other resampler and rematrix set-ups.
func extraFormats(t *testing.T) []string {
	t.Helper()
	src := filepath.Join(library(t), "good", "chord.flac")
	dir := t.TempDir()
	var out []string
	for _, f := range []struct {
		name string
		args []string
	}{
		{"s16.wav", nil},
		{"s24-48k.wav", []string{"-c:a", "pcm_s24le", "-ar", "48000"}},
		{"f32-22k.wav", []string{"-c:a", "pcm_f32le", "-ar", "22050"}},
		{"u8.wav", []string{"-c:a", "pcm_u8"}},
		{"mono.aiff", []string{"-ac", "1"}},
		{"surround.flac", []string{"-af", "pan=5.1|FL=c0|FR=c1|FC=c0|LFE=c1|BL=c0|BR=c1"}},
		{"s32-96k.flac", []string{"-ar", "96000", "-sample_fmt", "s32"}},
		{"mp2.mp2", []string{"-c:a", "mp2"}},
		{"ac3.ac3", nil},
		{"wma.wma", nil},
	} {
		p := filepath.Join(dir, f.name)
		args := append([]string{"-v", "error", "-i", src}, f.args...)
		if out, err := exec.Command("ffmpeg", append(args, p)...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %s: %v\n%s", f.name, err, out)
		}
		out = append(out, p)
	}
	return out
}

// libav decodes every file of the test library, and the extra formats, to
// exactly the samples ffmpeg writes (bit for bit, same length).
func TestLibavSamplesEqualFFmpeg(t *testing.T) {
	dir := library(t)
	var files []string
	for _, src := range sources {
		for _, ext := range formats {
			files = append(files, filepath.Join(dir, "good", src+"."+ext))
		}
	}
	files = append(files, extraFormats(t)...)
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			want, err := Decode(context.Background(), p, Options{Decoder: DecoderFFmpeg})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(context.Background(), p, Options{Decoder: DecoderLibav})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("libav: %d samples, ffmpeg %d", len(got), len(want))
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("sample %d: libav %v, ffmpeg %v", i, got[i], want[i])
			}
		})
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// The bad files fail with the class (and reason) ffmpeg's exit gets.
func TestLibavBadFilesAsFFmpeg(t *testing.T) {
	dir := library(t)
	bad, _ := filepath.Glob(filepath.Join(dir, "bad", "*"))
	junk := filepath.Join(t.TempDir(), "junk.mp3")
	if err := os.WriteFile(junk, slices.Repeat([]byte("not audio \x00\xff"), 500), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(bad, junk) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, ferr := Decode(context.Background(), p, Options{Decoder: DecoderFFmpeg})
			_, lerr := Decode(context.Background(), p, Options{Decoder: DecoderLibav})
			fc, lc := classOf(ferr), classOf(lerr)
			if fc != lc {
				t.Fatalf("libav: %v; ffmpeg: %v", lerr, ferr)
			}
			t.Logf("libav: %v; ffmpeg: %v", lerr, ferr)
		})
	}
}

func classOf(err error) worker.Class {
	if err == nil {
		return worker.OK
	}
	if e, ok := err.(*Error); ok {
		return e.Class
	}
	return "?"
}

// A canceled context stops the decode as interrupted.
func TestLibavCanceled(t *testing.T) {
	p := filepath.Join(library(t), "good", "speech.flac")
	ctx, cancel := context.WithCancel(context.Background())
	blocks := 0
	_, err := Stream(ctx, p, Options{Decoder: DecoderLibav}, func([]float32) error {
		blocks++
		cancel()
		return nil
	})
	if e := asError(t, err, worker.ServiceDown); !e.Interrupted || blocks != 1 {
		t.Fatalf("%v after %d blocks, want interrupted after 1", e, blocks)
	}
}
