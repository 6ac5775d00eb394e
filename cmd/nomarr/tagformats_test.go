package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTagEveryFormat: `nomarr tag` with the MusiCNN models over a library
// in all eleven formats written by scripts/testformats.sh (each file with
// the user's title, artist, GENRE "Jazz", MOOD "Mélancolie" and, where
// the format holds one, a cover) exits 0 with every file tagged; mutagen
// reads in every file the user's MOOD and GENRE first and Nomarr's values
// after them, and ffprobe shows a MOOD field (for WAV it shows the RIFF
// INFO chunk, not the ID3v2 one).
func TestTagEveryFormat(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ort := filepath.Join(root, ".cache", "onnxruntime", "libonnxruntime.so.1")
	models := filepath.Join(root, "..", "shared", "models", "musicnn")
	for _, p := range []string{ort, models} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs the MusiCNN models and ONNX Runtime (make deps): %v", err)
		}
	}
	bin := nomarrBinary(t)
	music, data := t.TempDir(), t.TempDir()
	if out, err := exec.Command("bash", filepath.Join(root, "scripts", "testformats.sh"), music).CombinedOutput(); err != nil {
		t.Fatalf("scripts/testformats.sh (ffmpeg, jmac, python3-mutagen: scripts/deps.sh --test): %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "tag", music, "--data-dir", data, "--workers", "1", "--analyzer", "musicnn",
		"--models-dir", models, "--onnxruntime-lib", ort, "--standard-tags", "mood,genre")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tagged 11, failed 0") {
		t.Fatalf("nomarr tag: %v\n%s", err, out)
	}
	py := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3"
	}
	std := map[string][2]string{ // mutagen's names of MOOD and GENRE
		"mp3": {"TMOO", "TCON"}, "wav": {"TMOO", "TCON"}, "aiff": {"TMOO", "TCON"},
		"m4a": {"----:com.apple.iTunes:MOOD", "©gen"}, "wma": {"WM/Mood", "WM/Genre"},
	}
	for _, ext := range []string{"mp3", "flac", "ogg", "opus", "oga", "m4a", "wav", "aiff", "wv", "ape", "wma"} {
		path := filepath.Join(music, "chord."+ext)
		b, err := exec.Command(py, filepath.Join(root, "adapters", "tagwrite", "testdata", "readtags.py"), path).Output()
		if err != nil {
			t.Fatalf("%s: readtags.py: %v", ext, err)
		}
		var m map[string][]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		names, ok := std[ext]
		if !ok {
			names = [2]string{"MOOD", "GENRE"}
		}
		mood, genre := m[names[0]], m[names[1]]
		if ext == "wma" { // TagLib 1.13 does not keep an ASF attribute's order
			slices.Sort(mood)
			slices.Sort(genre)
		}
		if len(mood) < 2 || !slices.Contains(mood, "Mélancolie") || ext != "wma" && mood[0] != "Mélancolie" {
			t.Errorf("%s: MOOD %q: want the user's value first and Nomarr's after it", ext, mood)
		}
		if len(genre) < 2 || !slices.Contains(genre, "Jazz") || ext != "wma" && genre[0] != "Jazz" {
			t.Errorf("%s: GENRE %q: want the user's value first and Nomarr's after it", ext, genre)
		}
		if ext == "wav" {
			continue
		}
		probe, err := exec.Command("ffprobe", "-v", "error", "-of", "json", "-show_entries", "format_tags:stream_tags", path).Output()
		if err != nil {
			t.Fatalf("%s: ffprobe: %v", ext, err)
		}
		lower := strings.ToLower(string(probe)) // ffmpeg's names: TMOO, MOOD, mood, WM/Mood
		if !strings.Contains(lower, `"tmoo":`) && !strings.Contains(lower, `"mood":`) && !strings.Contains(lower, `"wm/mood":`) {
			t.Errorf("%s: ffprobe shows no MOOD: %s", ext, probe)
		}
	}
}
