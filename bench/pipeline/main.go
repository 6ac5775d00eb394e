// Command pipeline benchmarks Nomarr's tagging pipeline (docs/design.md §9 steps
// 1–3: ffmpeg decode → Essentia-exact mel patches → MusiCNN backbone and nine
// heads on ONNX Runtime) against a reference built from the upstream pieces
// (reference.js: the same ffmpeg decode, essentia.js features,
// onnxruntime-node inference), side by side, single-threaded, and checks that
// both predict the same.
//
// Usage (scripts/bench-pipeline.sh prepares the audio and the dependencies):
//
//	go run ./bench/pipeline [-lib L] [-models DIR] [-batch 8] [-tol 1e-3] FILE...
//
// Ours runs in this process with GOMAXPROCS=1 and ONNX Runtime intra-op
// threads 1, as one CPU worker would: the models are loaded and warmed up
// (one batch of zeros) first, then every file is decoded (adapters/audio),
// turned into patches (adapters/features, one Extractor and one patch buffer
// reused across files, like adapters/analyzer) and predicted
// (adapters/inference, Config{Threads: 1, BatchSize: -batch}), each stage timed
// on the wall clock. The peak RSS (VmHWM of /proc/self/status, ONNX Runtime's
// memory included) is read after each file, the high-water mark reset
// between files through /proc/self/clear_refs where the kernel allows it.
// Our patches go to a temporary directory, not memory, so that keeping them
// for the comparison does not count as the worker's memory.
//
// Then the reference runs in a node child process, on the same files, after
// ours (the two never compete for a core). Its ONNX Runtime keeps
// onnxruntime-node's default CPU memory arena (-ref-cpu-arena=false turns it
// off, as adapters/inference does: slower runs for a much smaller resident set). Finally the program compares, per
// file, the decoded samples (sha256 of the f32le bytes), the patches (max
// abs difference, for information: the features are specified within 1e-4)
// and the predictions (max abs difference over the MSD activations and the
// nine heads, every patch), prints one table, and exits 1 when a prediction
// differs by more than -tol (or a file's patch count or decode differs).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/core/tags"
)

type stages struct {
	decode, features, inference time.Duration
}

func (s stages) total() time.Duration { return s.decode + s.features + s.inference }

func (s *stages) add(o stages) {
	s.decode += o.decode
	s.features += o.features
	s.inference += o.inference
}

// oursResult is one file's outcome in this process.
type oursResult struct {
	path     string
	samples  int
	sha256   string
	patches  int
	times    stages
	peakKiB  int64 // VmHWM after the file
	pred     tags.Predictions
	featPath string
}

// refFile and refOutput mirror reference.js's JSON.
type refFile struct {
	Path        string  `json:"path"`
	Samples     int     `json:"samples"`
	SHA256      string  `json:"sha256"`
	Patches     int     `json:"patches"`
	DecodeMs    float64 `json:"decodeMs"`
	FeaturesMs  float64 `json:"featuresMs"`
	InferenceMs float64 `json:"inferenceMs"`
	// CPU times: node's threads, and ffmpeg's for the decode.
	DecodeCPUMs    float64                `json:"decodeCpuMs"`
	FeaturesCPUMs  float64                `json:"featuresCpuMs"`
	InferenceCPUMs float64                `json:"inferenceCpuMs"`
	MSD            [][]float64            `json:"msd"`
	Heads          map[string][][]float64 `json:"heads"`
}

type refOutput struct {
	Essentia    string    `json:"essentia"`
	ONNXRuntime string    `json:"onnxruntime"`
	LoadMs      float64   `json:"loadMs"`
	PeakRssKiB  int64     `json:"peakRssKiB"`
	Files       []refFile `json:"files"`
}

func (f refFile) times() stages {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return stages{ms(f.DecodeMs), ms(f.FeaturesMs), ms(f.InferenceMs)}
}

func main() {
	lib := flag.String("lib", ".cache/onnxruntime/libonnxruntime.so.1", "ONNX Runtime library")
	models := flag.String("models", "../shared/models/musicnn", "directory of the MusiCNN ONNX models")
	batch := flag.Int("batch", 8, "patches per ONNX Runtime run (both pipelines)")
	tol := flag.Float64("tol", 1e-3, "largest allowed prediction difference")
	node := flag.String("node", "node", "node executable")
	ref := flag.String("reference", "bench/pipeline/reference.js", "reference script")
	procs := flag.Int("gomaxprocs", 1, "GOMAXPROCS for our pipeline")
	arena := flag.Bool("cpu-arena", true, "keep ONNX Runtime's CPU memory arena in our pipeline (adapters/inference Config.CPUArena, config key ort_cpu_arena: default true)")
	plain := flag.Bool("plain-graph", false, "run our backbone as exported, without the load-time rewrite (adapters/inference Config.PlainGraph)")
	longSec := flag.Float64("long", 60, "files at least this many seconds long get their own real-time factors (typical tracks: the per-file cost of starting ffmpeg weighs on short files)")
	streamedRounds := flag.Int("streamed", 0, "instead of the comparison: measure the streamed pipeline (CPU time of the process tree per stage, ffmpeg and libav decoding, peak RSS) over this many interleaved rounds and print the medians")
	ortProfile := flag.String("ort-profile", "", "with -streamed: have ONNX Runtime profile every node of our sessions into files PREFIX_*.json and print where the inference time goes")
	scoresOut := flag.String("scores-out", "", "with -streamed: write every file's per-patch scores into this directory (for -scores-against of a later build)")
	scoresAgainst := flag.String("scores-against", "", "with -streamed: compare the scores with those another build wrote (-scores-out) and exit 1 when a pooled mean or spread differs by more than 1e-5")
	withRef := flag.Bool("with-reference", false, "with -streamed: run the reference in every round as well, its CPU time per stage side by side")
	refArena := flag.Bool("ref-cpu-arena", true, "keep onnxruntime-node's CPU memory arena in the reference (its default; adapters/inference turns it off)")
	flag.Parse()
	files := flag.Args()
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: pipeline [flags] FILE...")
		flag.PrintDefaults()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)
	if *streamedRounds > 0 {
		m := inference.New(inference.Config{LibraryPath: *lib, ModelsDir: *models, Threads: 1, BatchSize: *batch, CPUArena: *arena,
			PlainGraph: *plain, ProfilePrefix: *ortProfile})
		if err := m.Load(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
			os.Exit(2)
		}
		o := streamedOptions{rounds: *streamedRounds, reference: *withRef, node: *node, ref: *ref, models: *models, batch: *batch,
			refArena: *refArena, scoresOut: *scoresOut, scoresAgainst: *scoresAgainst}
		tmpScores := ""
		if o.scoresAgainst != "" && o.scoresOut == "" {
			dir, err := os.MkdirTemp("", "bench-pipeline-scores-*")
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
				os.Exit(2)
			}
			o.scoresOut = dir
			tmpScores = dir
		}
		if o.scoresOut != "" {
			if err := os.MkdirAll(o.scoresOut, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
				os.Exit(2)
			}
		}
		ok, err := runStreamed(files, m, o)
		if tmpScores != "" {
			os.RemoveAll(tmpScores)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
			os.Exit(2)
		}
		m.Unload() // writes the profiles
		if *ortProfile != "" {
			if err := printORTProfile(*ortProfile); err != nil {
				fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
				os.Exit(2)
			}
		}
		if !ok {
			os.Exit(1)
		}
		return
	}
	code, err := run(files, *lib, *models, *batch, *tol, *node, *ref, *refArena, *arena, *plain, *longSec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(files []string, lib, modelsDir string, batch int, tol float64, node, ref string, refArena, arena, plain bool, longSec float64) (int, error) {
	tmp, err := os.MkdirTemp("", "bench-pipeline-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	for _, d := range []string{"ours", "ref"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			return 0, err
		}
	}

	// --- ours ---------------------------------------------------------------
	startKiB, _ := peakRSS()
	t0 := time.Now()
	m := inference.New(inference.Config{LibraryPath: lib, ModelsDir: modelsDir, Threads: 1, BatchSize: batch, CPUArena: arena, PlainGraph: plain})
	if err := m.Load(context.Background()); err != nil {
		return 0, fmt.Errorf("load models: %w", err)
	}
	defer m.Unload()
	loadTime := time.Since(t0)
	ext := features.NewExtractor()
	if _, err := m.Predict(make([]float32, batch*inference.PatchSize), batch); err != nil { // warm-up
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	ext.AppendPatches(nil, make([]float32, 3*audio.SampleRate))
	loadedKiB, _ := peakRSS()
	resettable := resetPeakRSS() == nil
	peakKiB := loadedKiB

	var buf []float32
	ours := make([]oursResult, 0, len(files))
	for i, path := range files {
		var r oursResult
		r.path = path
		t := time.Now()
		samples, err := audio.Decode(context.Background(), path, audio.Options{})
		if err != nil {
			return 0, fmt.Errorf("decode %s: %w", path, err)
		}
		r.times.decode = time.Since(t)
		t = time.Now()
		var n int
		buf, n = ext.AppendPatches(buf[:0], samples)
		r.times.features = time.Since(t)
		t = time.Now()
		r.pred, err = m.Predict(buf, n)
		if err != nil {
			return 0, fmt.Errorf("predict %s: %w", path, err)
		}
		r.times.inference = time.Since(t)
		r.peakKiB, _ = peakRSS()
		peakKiB = max(peakKiB, r.peakKiB)
		if resettable {
			_ = resetPeakRSS()
		}
		// Bookkeeping for the comparison, outside the timed part.
		r.samples, r.patches = len(samples), n
		r.sha256 = sumF32(samples)
		r.featPath = filepath.Join(tmp, "ours", strconv.Itoa(i)+".f32")
		if err := writeF32(r.featPath, buf[:n*inference.PatchSize]); err != nil {
			return 0, err
		}
		ours = append(ours, r)
	}
	patchBuf := cap(buf)
	buf = nil

	// --- reference ----------------------------------------------------------
	args := []string{ref, "--models", modelsDir, "--batch", strconv.Itoa(batch),
		"--features-dir", filepath.Join(tmp, "ref")}
	if !refArena {
		args = append(args, "--no-cpu-arena")
	}
	cmd := exec.Command(node, append(args, files...)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("reference (%s %s): %w", node, ref, err)
	}
	var refOut refOutput
	if err := json.Unmarshal(stdout.Bytes(), &refOut); err != nil {
		return 0, fmt.Errorf("reference output: %w", err)
	}
	if len(refOut.Files) != len(files) {
		return 0, fmt.Errorf("reference returned %d files, want %d", len(refOut.Files), len(files))
	}

	// --- compare and print ----------------------------------------------------
	fail := false
	var sumOurs, sumRef, longOurs, longRef stages
	var audioSec, longAudio, maxPred, maxFeat float64
	longFiles := 0
	var problems []string
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "file\taudio s\tpatches\t"+
		"ours dec ms\tfeat ms\tinfer ms\ttotal ms\tRTF\t"+
		"ref dec ms\tfeat ms\tinfer ms\ttotal ms\tRTF\t"+
		"ours/ref\tmax |Δfeat|\tmax |Δpred|\tpeak RSS MiB\t")
	for i, o := range ours {
		rf := refOut.Files[i]
		sec := float64(o.samples) / audio.SampleRate
		audioSec += sec
		rt := rf.times()
		sumOurs.add(o.times)
		sumRef.add(rt)
		if sec >= longSec {
			longOurs.add(o.times)
			longRef.add(rt)
			longAudio += sec
			longFiles++
		}
		if rf.SHA256 != o.sha256 || rf.Samples != o.samples {
			problems = append(problems, fmt.Sprintf("%s: decoded audio differs (ours %d samples, reference %d)", o.path, o.samples, rf.Samples))
			fail = true
		}
		dPred, err := predDiff(o.pred, rf)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", o.path, err))
			fail = true
			dPred = math.Inf(1)
		}
		dFeat, err := featDiff(o.featPath, filepath.Join(tmp, "ref", strconv.Itoa(i)+".f32"))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: features: %v", o.path, err))
			dFeat = math.Inf(1)
		}
		if dPred > tol {
			fail = true
		}
		maxPred, maxFeat = math.Max(maxPred, dPred), math.Max(maxFeat, dFeat)
		fmt.Fprintf(w, "%s\t%.1f\t%d\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.1f\t%.2f\t%.1e\t%.1e\t%.1f\t\n",
			filepath.Base(o.path), sec, o.patches,
			msStr(o.times.decode), msStr(o.times.features), msStr(o.times.inference), msStr(o.times.total()), rtf(sec, o.times.total()),
			msStr(rt.decode), msStr(rt.features), msStr(rt.inference), msStr(rt.total()), rtf(sec, rt.total()),
			rt.total().Seconds()/o.times.total().Seconds(), dFeat, dPred, mib(o.peakKiB))
	}
	fmt.Fprintf(w, "ALL\t%.1f\t%d\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.1f\t%.2f\t%.1e\t%.1e\t%.1f\t\n",
		audioSec, totalPatches(ours),
		msStr(sumOurs.decode), msStr(sumOurs.features), msStr(sumOurs.inference), msStr(sumOurs.total()), rtf(audioSec, sumOurs.total()),
		msStr(sumRef.decode), msStr(sumRef.features), msStr(sumRef.inference), msStr(sumRef.total()), rtf(audioSec, sumRef.total()),
		sumRef.total().Seconds()/sumOurs.total().Seconds(), maxFeat, maxPred, mib(peakKiB))
	w.Flush()

	fmt.Println()
	fmt.Printf("setup: %s/%s, %d CPUs, GOMAXPROCS=%d, ORT intra-op threads 1, batch %d, %d files, %.1f s of audio, %d patches\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), batch, len(files), audioSec, totalPatches(ours))
	fmt.Printf("reference: node %s, essentia.js (Essentia %s), onnxruntime-node %s, CPU memory arena %s; ours: ONNX Runtime %s, CPU memory arena %s, backbone %s\n",
		nodeVersion(node), refOut.Essentia, refOut.ONNXRuntime, onOff(refArena), inference.RuntimeVersion(), onOff(arena), map[bool]string{true: "as exported", false: "rewritten"}[plain])
	fmt.Printf("model load: ours %s ms, reference %s ms (then one warm-up batch each; neither in the totals)\n",
		msStr(loadTime), msStr(time.Duration(refOut.LoadMs*float64(time.Millisecond))))
	fmt.Println()
	sw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(sw, "stage\tours ms\treference ms\tours/ref speed\t\n")
	for _, s := range []struct {
		name string
		o, r time.Duration
	}{{"decode", sumOurs.decode, sumRef.decode}, {"features", sumOurs.features, sumRef.features},
		{"inference", sumOurs.inference, sumRef.inference}, {"total", sumOurs.total(), sumRef.total()}} {
		fmt.Fprintf(sw, "%s\t%s\t%s\t%.2fx\t\n", s.name, msStr(s.o), msStr(s.r), s.r.Seconds()/s.o.Seconds())
	}
	sw.Flush()
	fmt.Println()
	fmt.Printf("RTF ours (per core):       %.1fx real time\n", rtf(audioSec, sumOurs.total()))
	fmt.Printf("RTF reference (per core):  %.1fx real time\n", rtf(audioSec, sumRef.total()))
	fmt.Printf("speed ratio ours/ref:      %.2fx\n", sumRef.total().Seconds()/sumOurs.total().Seconds())
	if longFiles > 0 {
		fmt.Printf("files ≥ %.0f s (%d, %.0f s of audio): RTF ours %.1fx, reference %.1fx, ratio %.2fx; ours decode %.0fx, features %.0fx, inference %.1fx real time\n",
			longSec, longFiles, longAudio, rtf(longAudio, longOurs.total()), rtf(longAudio, longRef.total()),
			longRef.total().Seconds()/longOurs.total().Seconds(),
			rtf(longAudio, longOurs.decode), rtf(longAudio, longOurs.features), rtf(longAudio, longOurs.inference))
	}
	fmt.Printf("max |Δprediction|:         %.2e (limit %.0e: %s)\n", maxPred, tol, okStr(!fail))
	fmt.Printf("max |Δfeature| (info):     %.2e\n", maxFeat)
	how := "VmHWM, reset per file via /proc/self/clear_refs"
	if !resettable {
		how = "VmHWM, not resettable here: cumulative"
	}
	fmt.Printf("peak RSS ours (per worker): %.1f MiB (%s; %.1f MiB at start, %.1f MiB after model load + warm-up; patch buffer %.1f MiB)\n",
		mib(peakKiB), how, mib(startKiB), mib(loadedKiB), float64(patchBuf*4)/(1<<20))
	fmt.Printf("peak RSS reference:        %.1f MiB (node VmHWM)\n", mib(refOut.PeakRssKiB))
	for _, p := range problems {
		fmt.Println("PROBLEM:", p)
	}
	if fail {
		fmt.Println("FAIL: predictions differ from the reference")
		return 1, nil
	}
	return 0, nil
}

// predDiff is the max abs difference between our predictions and the
// reference's, over every patch of the MSD activations and the nine heads.
func predDiff(p tags.Predictions, rf refFile) (float64, error) {
	if len(p.MSD) != rf.Patches || len(rf.MSD) != rf.Patches {
		return 0, fmt.Errorf("patches: ours %d, reference %d", len(p.MSD), rf.Patches)
	}
	d := 0.0
	cmp := func(ours [][]float32, theirs [][]float64, what string) error {
		if len(ours) != len(theirs) {
			return fmt.Errorf("%s: ours %d patches, reference %d", what, len(ours), len(theirs))
		}
		for i := range ours {
			if len(ours[i]) != len(theirs[i]) {
				return fmt.Errorf("%s patch %d: ours %d values, reference %d", what, i, len(ours[i]), len(theirs[i]))
			}
			for j, v := range ours[i] {
				d = math.Max(d, math.Abs(float64(v)-theirs[i][j]))
			}
		}
		return nil
	}
	if err := cmp(p.MSD, rf.MSD, "msd"); err != nil {
		return 0, err
	}
	for _, h := range tags.Heads {
		if rf.Patches == 0 {
			break
		}
		if err := cmp(p.Heads[h], rf.Heads[h], h); err != nil {
			return 0, err
		}
	}
	if math.IsNaN(d) {
		return math.Inf(1), nil
	}
	return d, nil
}

func featDiff(a, b string) (float64, error) {
	x, err := readF32(a)
	if err != nil {
		return 0, err
	}
	y, err := readF32(b)
	if err != nil {
		return 0, err
	}
	if len(x) != len(y) {
		return 0, fmt.Errorf("ours %d values, reference %d", len(x), len(y))
	}
	d := 0.0
	for i := range x {
		d = math.Max(d, math.Abs(float64(x[i])-float64(y[i])))
	}
	return d, nil
}

func sumF32(v []float32) string {
	h := sha256.New()
	var b [4 << 10]byte
	for len(v) > 0 {
		k := min(len(v), len(b)/4)
		for i := range k {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v[i]))
		}
		h.Write(b[:4*k])
		v = v[k:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeF32(path string, v []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := binary.Write(w, binary.LittleEndian, v); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readF32(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes", path, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

var hwmRe = regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB`)

// peakRSS is this process's peak resident set size (VmHWM), KiB.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	m := hwmRe.FindSubmatch(b)
	if m == nil {
		return 0, errors.New("no VmHWM in /proc/self/status")
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// resetPeakRSS resets VmHWM to the current RSS (Linux ≥ 4.0).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func nodeVersion(node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func totalPatches(rs []oursResult) int {
	n := 0
	for _, r := range rs {
		n += r.patches
	}
	return n
}

func msStr(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

func rtf(sec float64, d time.Duration) float64 { return sec / d.Seconds() }

func mib(kib int64) float64 { return float64(kib) / 1024 }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func okStr(ok bool) string {
	if ok {
		return "OK"
	}
	return "EXCEEDED"
}
