//go:build cgo && !nolibav

package audio

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/adapters/tagwrite"
)

// TestMonkeysAudioDecodesToItsSource: a Monkey's Audio file (encoded by
// jmac, Debian libjmac-java: ffmpeg has no APE encoder), untagged and with
// Nomarr's APEv2 tag, decodes with libav and with ffmpeg to exactly the
// samples of the WAV it was encoded from (the codec is lossless).
func TestMonkeysAudioDecodesToItsSource(t *testing.T) {
	jmac, err := exec.LookPath("jmac")
	if err != nil {
		t.Fatalf("no Monkey's Audio encoder: jmac (Debian libjmac-java and a Java runtime; scripts/deps.sh --test installs them): %v", err)
	}
	dir := t.TempDir()
	wav := filepath.Join(dir, "chord.wav")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-i", filepath.Join(library(t), "good", "chord.flac"),
		"-c:a", "pcm_s16le", "-map_metadata", "-1", wav).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	ape := filepath.Join(dir, "chord.ape")
	if out, err := exec.Command(jmac, "c2", wav, ape).CombinedOutput(); err != nil {
		t.Fatalf("jmac: %v\n%s", err, out)
	}
	want, err := Decode(context.Background(), wav, Options{Decoder: DecoderFFmpeg})
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, path string) {
		for _, dec := range []string{DecoderLibav, DecoderFFmpeg} {
			got, err := Decode(context.Background(), path, Options{Decoder: dec})
			if err != nil {
				t.Fatalf("%s: %v", dec, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d samples, the WAV %d", dec, len(got), len(want))
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%s: sample %d is %v, the WAV's %v", dec, i, got[i], want[i])
			}
		}
	}
	t.Run("untagged", func(t *testing.T) { check(t, ape) })
	t.Run("tagged", func(t *testing.T) {
		tagged := filepath.Join(dir, "tagged.ape")
		data, err := os.ReadFile(ape)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tagged, data, 0o644); err != nil {
			t.Fatal(err)
		}
		err = tagwrite.WriteAll(tagged, map[string]string{"nom_version": "v", "mood-regular": "happy"},
			tagwrite.Standard{"mood": {"happy"}})
		if errors.Is(err, tagwrite.ErrNoTagLib) {
			t.Skip("built without TagLib (notaglib): cannot tag the file; build without the tag to run this")
		}
		if err != nil {
			t.Fatal(err)
		}
		check(t, tagged)
	})
}
