package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// clipCount is how many distinct clips TestSimilarFindsOtherEncoding
// makes: NOMARR_SIMILAR_CLIPS (30 for the full case), default 12, two of
// each of the six families of clipSource.
func clipCount(t *testing.T) int {
	if s := os.Getenv("NOMARR_SIMILAR_CLIPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			t.Fatalf("NOMARR_SIMILAR_CLIPS=%q: want a whole number ≥ 2", s)
		}
		return n
	}
	return 12
}

// speechLines are the texts of the speech clips, one a clip.
var speechLines = []string{
	"The quick brown fox jumps over the lazy dog, again and again, all afternoon.",
	"She sells sea shells by the sea shore, and the shells she sells are surely sea shells.",
	"Peter Piper picked a peck of pickled peppers; where is the peck he picked?",
	"How much wood would a woodchuck chuck if a woodchuck could chuck wood?",
	"Red lorry, yellow lorry, red lorry, yellow lorry, all the way to the market.",
}

// clipSource writes clip i (secs long, mono 44.1 kHz WAV) at path: clips
// of six families (chords, coloured noise, click rhythms, speech, sweeps,
// square-wave melodies), each family's clips set apart by pitch, colour,
// tempo, voice or rate.
func clipSource(t *testing.T, i, secs int, path string) {
	t.Helper()
	k := i / 6
	var cmd string
	switch i % 6 {
	case 0: // a major or minor triad on its own root
		f := 110 * math.Pow(2, float64(k*5)/12)
		third := 5.0 / 4
		if k%2 == 1 {
			third = 6.0 / 5
		}
		cmd = fmt.Sprintf(`ffmpeg -v error -y -f lavfi -i "aevalsrc='0.2*(sin(2*PI*%g*t)+sin(2*PI*%g*t)+sin(2*PI*%g*t))':s=44100:d=%d" %q`,
			f, f*third, f*1.5, secs, path)
	case 1: // noise of one colour, band-limited at its own cutoff
		colours := []string{"white", "pink", "brown", "blue", "violet", "velvet"}
		cmd = fmt.Sprintf(`ffmpeg -v error -y -f lavfi -i "anoisesrc=c=%s:a=0.3:d=%d:r=44100:s=%d,lowpass=f=%d" %q`,
			colours[k%len(colours)], secs, 1+i, 2000+3000*(k%4), path)
	case 2: // a click track at its own tempo and pitch
		period := 60.0 / float64(70+25*k)
		cmd = fmt.Sprintf(`ffmpeg -v error -y -f lavfi -i "aevalsrc='0.8*sin(2*PI*%d*t)*exp(-30*mod(t,%g))':s=44100:d=%d" %q`,
			300+150*k, period, secs, path)
	case 3: // speech, its own text, voice and rate
		voices := []string{"en", "en+f3", "en-us", "en+m7", "en+f5"}
		wav := path + ".speech.wav"
		runSh(t, fmt.Sprintf(`espeak-ng -v %s -s %d -w %q %q`, voices[k%len(voices)], 120+20*k, wav, speechLines[k%len(speechLines)]))
		cmd = fmt.Sprintf(`ffmpeg -v error -y -stream_loop -1 -i %q -t %d -ar 44100 -ac 1 %q`, wav, secs, path)
	case 4: // a rising sweep, repeating every period
		f0, span, period := 100+80*k, 400+300*k, 1+k%3
		cmd = fmt.Sprintf(`ffmpeg -v error -y -f lavfi -i "aevalsrc='0.4*sin(2*PI*(%d*mod(t,%d)+0.5*%g*mod(t,%d)^2))':s=44100:d=%d" %q`,
			f0, period, float64(span)/float64(period), period, secs, path)
	default: // a square-wave melody of four notes, its own key and step
		f := 220 * math.Pow(2, float64(k*3)/12)
		cmd = fmt.Sprintf(`ffmpeg -v error -y -f lavfi -i "aevalsrc='0.25*sgn(sin(2*PI*%g*pow(2,floor(mod(t*%d,4))*%d/12)*t))':s=44100:d=%d" %q`,
			f, 2+k%3, 2+k%4, secs, path)
	}
	runSh(t, cmd)
}

func runSh(t *testing.T, cmd string) {
	t.Helper()
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// TestSimilarFindsOtherEncoding is the check of the similarity feature
// end to end: each of N distinct clips is in the library twice, as FLAC
// and as MP3 at 96 kbit/s; `nomarr tag` (the built binary, the real
// models, 2 workers) stores a track vector per file, and `nomarr
// similar FILE -n 1 --json` answers, for every file, its other encoding.
func TestSimilarFindsOtherEncoding(t *testing.T) {
	for _, tool := range []string{"ffmpeg", "espeak-ng"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to make the clips: %v", tool, err)
		}
	}
	bin := nomarrBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, ".cache", "onnxruntime", "libonnxruntime.so.1")
	models := filepath.Join(root, "..", "shared", "models", "musicnn")
	if _, err := os.Stat(filepath.Join(models, "msd-musicnn-1.onnx")); err != nil {
		t.Fatalf("models: %v", err)
	}
	music, data, src := t.TempDir(), t.TempDir(), t.TempDir()
	n := clipCount(t)
	other := map[string]string{}
	var files []string
	for i := range n {
		wav := filepath.Join(src, fmt.Sprintf("%02d.wav", i))
		clipSource(t, i, 12, wav)
		flac := filepath.Join(music, fmt.Sprintf("clip%02d", i), "a.flac")
		mp3 := filepath.Join(music, fmt.Sprintf("clip%02d", i), "b.mp3")
		if err := os.MkdirAll(filepath.Dir(flac), 0o755); err != nil {
			t.Fatal(err)
		}
		runSh(t, fmt.Sprintf(`ffmpeg -v error -y -i %q %q`, wav, flac))
		runSh(t, fmt.Sprintf(`ffmpeg -v error -y -i %q -b:a 96k %q`, wav, mp3))
		other[flac], other[mp3] = mp3, flac
		files = append(files, flac, mp3)
	}
	nomarr := cli(t, bin, data)
	musicnn := []string{"--analyzer", "musicnn", "--models-dir", models, "--onnxruntime-lib", lib}
	nomarr(0, append([]string{"tag", music, "--workers", "2", "--write-mode", "none"}, musicnn...)...)
	wrong := 0
	for _, f := range files {
		out, _ := nomarr(0, append([]string{"similar", f, "-n", "1", "--json"}, musicnn...)...)
		var near similarLine
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &near); err != nil {
			t.Fatalf("similar %s: %q: %v", f, out, err)
		}
		if near.Path != other[f] {
			wrong++
			t.Errorf("nearest to %s is %s (%.4f), want %s", f, near.Path, near.Score, other[f])
		}
	}
	t.Logf("%d clips, %d files: %d nearest neighbours not the other encoding", n, len(files), wrong)
}
