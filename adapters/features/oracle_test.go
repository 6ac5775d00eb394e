package features

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// oracleTolerance is the largest absolute difference allowed between a band
// computed here and the same band computed by essentia.js.
const oracleTolerance = 1e-4

// oracleDir returns the absolute path of test/oracle.
func oracleDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "test", "oracle"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "musicnn.js")); err != nil {
		t.Fatalf("oracle script missing: %v", err)
	}
	return dir
}

// ensureOracle checks that node and npm are installed and that essentia.js
// is installed under test/oracle/node_modules, running `npm ci` if not.
func ensureOracle(t *testing.T) (node, dir string) {
	t.Helper()
	dir = oracleDir(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the essentia.js oracle needs Node.js (node and npm, Node 18 or newer), not found in PATH: %v\n"+
			"install them, e.g. Debian/Ubuntu: apt-get install nodejs npm; or from https://nodejs.org/", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "essentia.js", "package.json")); err == nil {
		return node, dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("essentia.js is not installed in %s and npm is not in PATH: %v\n"+
			"install npm (Debian/Ubuntu: apt-get install npm), then run: npm ci --prefix test/oracle", dir, err)
	}
	cmd := exec.Command(npm, "ci", "--prefix", dir, "--no-audit", "--no-fund")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("npm ci --prefix %s failed: %v\n%s", dir, err, out.String())
	}
	t.Logf("installed essentia.js with npm ci --prefix %s", dir)
	return node, dir
}

type oracleResult struct {
	bands   []float32 // frames × Bands
	frames  []float32 // frames × FrameSize
	n       int
	silent  int  // frames with mean power < 1e-10
	checked bool // framing checked against essentia.js FrameGenerator
	ver     string
}

// runOracle runs the essentia.js oracle on every signal in one node process.
func runOracle(t *testing.T, signals map[string][]float32, names []string) map[string]oracleResult {
	t.Helper()
	node, dir := ensureOracle(t)
	tmp := t.TempDir()
	args := []string{filepath.Join(dir, "musicnn.js"), "--frames"}
	paths := map[string]string{}
	for i, name := range names {
		p := filepath.Join(tmp, fmt.Sprintf("sig%02d.f32", i))
		if err := os.WriteFile(p, f32Bytes(signals[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
		args = append(args, p)
	}
	cmd := exec.Command(node, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		if len(msg) > 2000 { // the wasm bundle's source is one huge line
			msg = "…" + msg[len(msg)-2000:]
		}
		t.Fatalf("oracle failed: %v\n%s", err, msg)
	}
	type line struct {
		Input    string `json:"input"`
		Frames   int    `json:"frames"`
		Silent   int    `json:"silentFrames"`
		Checked  bool   `json:"frameGeneratorChecked"`
		Essentia string `json:"essentia"`
	}
	counts := map[string]line{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("oracle output %q: %v", l, err)
		}
		counts[v.Input] = v
	}
	res := map[string]oracleResult{}
	for _, name := range names {
		p := paths[name]
		v, ok := counts[p]
		if !ok {
			t.Fatalf("oracle gave no result for %s", name)
		}
		res[name] = oracleResult{
			bands:   readF32(t, p+".bands"),
			frames:  readF32(t, p+".frames"),
			n:       v.Frames,
			silent:  v.Silent,
			checked: v.Checked,
			ver:     v.Essentia,
		}
	}
	return res
}

func f32Bytes(s []float32) []byte {
	b := make([]byte, 4*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Test signals, 16 kHz mono.

func tone(n int, amp float64, freqs ...float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		var v float64
		for _, f := range freqs {
			v += math.Sin(2 * math.Pi * f * float64(i) / SampleRate)
		}
		s[i] = float32(amp * v / float64(len(freqs)))
	}
	return s
}

func whiteNoise(n int, amp float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x6e6f6d617272))
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(amp * (2*r.Float64() - 1))
	}
	return s
}

// speechLike is a voiced-speech-like signal: a harmonic source whose pitch
// glides (FM, 100-220 Hz) shaped by moving formant-like resonances and a
// syllable-rate (4 Hz) amplitude envelope with pauses, plus a little noise.
func speechLike(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	s := make([]float32, n)
	phase := 0.0
	for i := range s {
		tm := float64(i) / SampleRate
		f0 := 160 + 60*math.Sin(2*math.Pi*0.7*tm) + 10*math.Sin(2*math.Pi*5*tm)
		phase += 2 * math.Pi * f0 / SampleRate
		f1 := 500 + 250*math.Sin(2*math.Pi*1.3*tm)
		f2 := 1500 + 700*math.Sin(2*math.Pi*0.9*tm+1)
		var v float64
		for h := 1; h <= 30; h++ {
			fh := f0 * float64(h)
			if fh > SampleRate/2 {
				break
			}
			g := 1/(1+math.Pow((fh-f1)/120, 2)) + 0.6/(1+math.Pow((fh-f2)/200, 2)) + 0.05/float64(h)
			v += g * math.Sin(float64(h)*phase)
		}
		env := math.Max(0, math.Sin(2*math.Pi*4*tm))
		env *= env
		s[i] = float32(0.25*env*v + 0.01*env*(2*r.Float64()-1))
	}
	return s
}

// espeakClip returns a real speech clip from espeak-ng resampled to 16 kHz
// by ffmpeg or sox, or nil (and why) when those tools are missing.
func espeakClip(t *testing.T) ([]float32, string) {
	t.Helper()
	espeak, err := exec.LookPath("espeak-ng")
	if err != nil {
		return nil, "espeak-ng not installed (scripts/deps.sh installs it)"
	}
	tmp := t.TempDir()
	wav := filepath.Join(tmp, "speech.wav")
	raw := filepath.Join(tmp, "speech.f32")
	text := "The quick brown fox jumps over the lazy dog. Music tagging with convolutional networks."
	if out, err := exec.Command(espeak, "-w", wav, text).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("espeak-ng failed: %v: %s", err, out)
	}
	if ff, err := exec.LookPath("ffmpeg"); err == nil {
		out, err := exec.Command(ff, "-nostdin", "-loglevel", "error", "-y", "-i", wav,
			"-ac", "1", "-ar", "16000", "-f", "f32le", raw).CombinedOutput()
		if err != nil {
			return nil, fmt.Sprintf("ffmpeg failed: %v: %s", err, out)
		}
	} else if sox, err := exec.LookPath("sox"); err == nil {
		out, err := exec.Command(sox, wav, "-t", "raw", "-e", "floating-point", "-b", "32",
			"-L", "-c", "1", "-r", "16000", raw).CombinedOutput()
		if err != nil {
			return nil, fmt.Sprintf("sox failed: %v: %s", err, out)
		}
	} else {
		return nil, "neither ffmpeg nor sox installed to resample the espeak-ng clip"
	}
	return readF32(t, raw), ""
}

// TestOracle compares Frames with essentia.js's FrameCutter +
// TensorflowInputMusiCNN on synthetic and (when espeak-ng is installed) real
// speech signals: same frame count, the same samples in every frame, and
// every band within oracleTolerance.
func TestOracle(t *testing.T) {
	const sec = SampleRate
	signals := map[string][]float32{
		"tone440":         tone(3*sec, 0.5, 440),
		"chordCmaj":       tone(3*sec+123, 0.8, 261.63, 329.63, 392.00, 523.25, 1046.5, 3136),
		"whiteNoise":      whiteNoise(3*sec+77, 0.5, 42),
		"quietNoise":      whiteNoise(2*sec, 0.001, 7),
		"fullScale":       tone(sec, 1.0, 97, 4001, 7999),
		"silence":         make([]float32, 2*sec),
		"speechLike":      speechLike(4*sec+255, 3),
		"short100":        whiteNoise(100, 0.3, 9),
		"exact512":        tone(512, 0.5, 1000),
		"toneThenSilence": append(tone(sec/2, 0.5, 440), make([]float32, sec/2)...),
	}
	names := []string{"tone440", "chordCmaj", "whiteNoise", "quietNoise", "fullScale",
		"silence", "speechLike", "short100", "exact512", "toneThenSilence"}
	if clip, why := espeakClip(t); clip != nil {
		signals["espeak"] = clip
		names = append(names, "espeak")
	} else {
		t.Logf("real speech clip not used: %s; the synthetic speechLike signal stands in", why)
	}

	res := runOracle(t, signals, names)
	e := NewExtractor()
	for _, name := range names {
		sig := signals[name]
		o := res[name]
		got := e.Frames(sig)
		if o.n != len(got) || o.n != FrameCount(len(sig)) {
			t.Errorf("%s (%d samples): essentia.js %d frames, Frames %d, FrameCount %d",
				name, len(sig), o.n, len(got), FrameCount(len(sig)))
			continue
		}
		if o.silent == 0 && !o.checked {
			t.Errorf("%s: the oracle did not check its framing against FrameGenerator", name)
		}
		if len(o.bands) != o.n*Bands || len(o.frames) != o.n*FrameSize {
			t.Fatalf("%s: oracle output sizes %d, %d for %d frames", name, len(o.bands), len(o.frames), o.n)
		}
		// Framing: frame k holds samples FrameStart(k)… with zero padding.
		for k := 0; k < o.n; k++ {
			for i := 0; i < FrameSize; i++ {
				var want float32
				if j := FrameStart(k) + i; j >= 0 && j < len(sig) {
					want = sig[j]
				}
				if g := o.frames[k*FrameSize+i]; g != want {
					t.Fatalf("%s: frame %d sample %d: essentia.js %v, expected sample %d = %v",
						name, k, i, g, FrameStart(k)+i, want)
				}
			}
		}
		var maxDiff float64
		worstK, worstB := 0, 0
		for k := range got {
			for b := 0; b < Bands; b++ {
				d := math.Abs(float64(got[k][b]) - float64(o.bands[k*Bands+b]))
				if d > maxDiff {
					maxDiff, worstK, worstB = d, k, b
				}
			}
		}
		t.Logf("%-16s %6d samples %4d frames (%3d silent, framing checked against FrameGenerator: %v): max |Go - essentia.js| = %.3g (frame %d band %d: %v vs %v)",
			name, len(sig), o.n, o.silent, o.checked, maxDiff, worstK, worstB, got[worstK][worstB], o.bands[worstK*Bands+worstB])
		if maxDiff > oracleTolerance {
			t.Errorf("%s: max difference %g > %g", name, maxDiff, oracleTolerance)
		}
	}
	if len(names) > 0 {
		t.Logf("oracle: essentia.js with Essentia %s", res[names[0]].ver)
	}
}
