package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
)

// toneFiles writes a short sine tone at each name under dir with ffmpeg
// (a real audio file that ffprobe opens), each at its own pitch.
func toneFiles(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg is needed to make the audio files: ", err)
	}
	var paths []string
	for i, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		src := fmt.Sprintf("sine=frequency=%d:duration=0.2", 220+40*i)
		if out, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, p).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %s: %v\n%s", n, err, out)
		}
		paths = append(paths, p)
	}
	return paths
}

// putVectors stores, straight into the SQLite store of data, a vector
// per path of the noop analyzer's model set: path i at angle angles[i]
// in a plane of 8 dimensions (cosine of two tracks = cos of their angle
// difference).
func putVectors(t *testing.T, data string, paths []string, angles []float64) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, p := range paths {
		v := make([]float32, 8)
		v[0], v[1], v[2+i%6] = float32(math.Cos(angles[i])), float32(math.Sin(angles[i])), 0.01
		if err := st.PutTrackVector(t.Context(), library.Key(p), analyzer.NoopVersion, v); err != nil {
			t.Fatal(err)
		}
	}
}

// ffprobeOpens checks that ffprobe reads the playlist at path and the
// audio of its first entry (FLAC). Its playlist reader is the HLS one,
// named (-f hls): the format probe takes a file for HLS only by the
// #EXT-X- tags of a stream, which a music playlist has no use for; an
// entry it cannot open it skips silently, so playlistPaths checks them
// all.
func ffprobeOpens(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-f", "hls", "-show_entries", "stream=codec_name", "-of", "csv", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stream,flac") {
		t.Fatalf("ffprobe %s: %v\n%s", path, err, out)
	}
}

// playlistPaths reads an M3U8 playlist's entries, resolved against its
// folder, and checks its header and #EXTINF lines.
func playlistPaths(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "#EXTM3U" {
		t.Fatalf("%s starts %q", path, lines[0])
	}
	var out []string
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "#") && !strings.HasPrefix(lines[i], "#EXTINF:") {
			continue
		}
		if !strings.HasPrefix(lines[i], "#EXTINF:-1,") || i+1 == len(lines) {
			t.Fatalf("%s line %d: %q, want #EXTINF:-1,ARTIST - TITLE and a path", path, i+1, lines[i])
		}
		entry := lines[i+1]
		if filepath.IsAbs(entry) {
			t.Fatalf("%s: absolute path %s", path, entry)
		}
		abs := filepath.Join(filepath.Dir(path), entry)
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s names %s: %v", path, entry, err)
		}
		out = append(out, abs)
		i++
	}
	return out
}

// TestSimilarMixAndPath: with vectors put straight into the store,
// similar lists the closest tracks best first (--json, --m3u), mix and
// path write M3U8 playlists that ffprobe opens and whose paths exist;
// an unknown file, a file without a vector and a bad -n are refused.
func TestSimilarMixAndPath(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	names := []string{"Ann/One/a.flac", "Ann/One/b.flac", "Ann/Two/c.flac", "Bob/Three/d.flac", "Bob/Three/e.flac", "Cy/Four/f.flac", "Cy/Four/novec.flac"}
	paths := toneFiles(t, lib, names...)
	nomarr := cli(t, bin, data)
	nomarr(0, "scan", lib)
	putVectors(t, data, paths[:6], []float64{0, 0.1, 0.25, 0.5, 0.8, 1.2})
	noop := func(code int, args ...string) (string, string) {
		t.Helper()
		return nomarr(code, append(args, "--analyzer", "noop")...)
	}

	out, _ := noop(0, "similar", paths[0], "-n", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], paths[1]) || !strings.HasSuffix(lines[1], paths[2]) || !strings.HasSuffix(lines[2], paths[3]) {
		t.Fatalf("similar a = %q, want b, c, d", out)
	}
	out, _ = noop(0, "similar", paths[4], "-n", "2", "--json")
	var first similarLine
	if err := json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &first); err != nil || first.Path != paths[3] || first.Score < 0.95 {
		t.Fatalf("similar e --json: %q (%+v, %v)", out, first, err)
	}
	m3u := filepath.Join(lib, "near.m3u8")
	out, _ = noop(0, "similar", paths[0], "-n", "4", "--m3u")
	if err := os.WriteFile(m3u, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	// --m3u writes paths relative to the working directory, which is
	// the test's: resolve them from there.
	if !strings.Contains(out, "#EXTINF:-1,Ann - b\n") {
		t.Errorf("similar --m3u: %q", out)
	}

	mix := filepath.Join(lib, "lists", "mix.m3u8")
	if err := os.MkdirAll(filepath.Dir(mix), 0o755); err != nil {
		t.Fatal(err)
	}
	noop(0, "mix", paths[0], paths[5], "-n", "5", "--out", mix)
	ffprobeOpens(t, mix)
	got := playlistPaths(t, mix)
	if len(got) != 5 || got[0] != paths[0] || got[1] != paths[5] {
		t.Fatalf("mix = %q, want 5 tracks opening with the seeds a and f", got)
	}
	path := filepath.Join(lib, "path.m3u8")
	noop(0, "path", paths[0], paths[5], "-n", "4", "--out", path)
	ffprobeOpens(t, path)
	if got := playlistPaths(t, path); len(got) != 4 || got[0] != paths[0] || got[3] != paths[5] {
		t.Fatalf("path = %q, want 4 tracks from a to f", got)
	}

	_, errb := noop(1, "similar", filepath.Join(lib, "nosuch.flac"))
	if !strings.Contains(errb, "no such file") {
		t.Errorf("similar of a file not there: %q", errb)
	}
	stray := toneFiles(t, t.TempDir(), "stray.flac")[0]
	if _, errb := noop(1, "similar", stray); !strings.Contains(errb, "not a file of the library") {
		t.Errorf("similar of a file not scanned: %q", errb)
	}
	if _, errb := noop(1, "mix", paths[0], paths[6]); !strings.Contains(errb, "no track vector") {
		t.Errorf("mix with a seed without a vector: %q", errb)
	}
	noop(2, "similar", paths[0], "-n", "0")
	noop(2, "similar", paths[0], "-n", "1001")
	noop(2, "path", paths[0])
	noop(2, "path", paths[0], paths[1], "-n", "1")
	noop(2, "similar", paths[0], "--json", "--m3u")
	// An analyzer that records no model set has no vectors to compare.
	if _, errb := nomarr(1, "similar", paths[0], "--analyzer", "script:"+filepath.Join(lib, "none.yaml")); errb == "" {
		t.Error("similar with another model set answered")
	}
}
