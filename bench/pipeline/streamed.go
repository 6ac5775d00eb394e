package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/core/tags"
)

// cpuTime is the CPU time (user + system) of this process and of its
// reaped children (the ffmpeg processes).
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// streamedRun is one file's CPU times (whole process tree) in one round.
type streamedRun struct {
	ffmpegDecode time.Duration
	// The streamed pipeline and its stages: features around each Feed,
	// inference around each Predict, decode the rest.
	pipeline, features, inference time.Duration
	seconds                       float64
	peakKiB                       int64
	// The reference's CPU times (node and its ffmpeg), when it ran.
	ref     stages
	refPeak int64
	refDiff float64 // max |Δprediction| against the reference
}

func (s streamedRun) decode() time.Duration { return s.pipeline - s.features - s.inference }

// streamedOptions are runStreamed's settings beyond the models.
type streamedOptions struct {
	rounds    int
	reference bool // run reference.js on the same files in every round
	node, ref string
	models    string
	batch     int
	refArena  bool
	// scoresOut, when set, receives every file's per-patch scores (first
	// round); scoresAgainst, when set, holds another build's, and the
	// differences are printed (scoreBar: the largest allowed difference
	// of a pooled mean or spread).
	scoresOut, scoresAgainst string
}

// scoreBar is the largest difference of a pooled mean or spread allowed
// between builds: the accuracy bar of the analysis.
const scoreBar = 1e-5

// runStreamed measures, per file and interleaved over rounds, the CPU time
// of decoding with ffmpeg alone and of the whole streamed pipeline (libav
// decode → Patcher → chunked Predict) with its stages, and the peak RSS of
// the streamed pipeline; with o.reference, each round then runs the
// reference pipeline over the same files (one node process a round, its
// model load not counted). It prints the medians.
func runStreamed(files []string, m *inference.Models, o streamedOptions) (ok bool, err error) {
	ctx := context.Background()
	runs := make([][]streamedRun, len(files))
	ext := features.NewExtractor()
	patcher := features.NewPatcher(ext)
	chunk := m.ChunkPatches()
	var buf []float32
	for r := 0; r < o.rounds; r++ {
		preds := make([]tags.Predictions, len(files))
		for i, path := range files {
			var s streamedRun
			discard := func([]float32) error { return nil }
			t := cpuTime()
			n, err := audio.Stream(ctx, path, audio.Options{Decoder: audio.DecoderFFmpeg}, discard)
			if err != nil {
				return false, fmt.Errorf("%s: %w", path, err)
			}
			s.ffmpegDecode = cpuTime() - t
			s.seconds = float64(n) / audio.SampleRate
			_ = resetPeakRSS()
			t = cpuTime()
			patcher.Reset()
			var pred tags.Predictions
			predict := func(all bool) error {
				for patcher.Ready() >= chunk || all && patcher.Ready() > 0 {
					var k int
					buf, k = patcher.AppendReady(buf[:0], chunk)
					f := cpuTime()
					p, err := m.Predict(buf, k)
					s.inference += cpuTime() - f
					if err != nil {
						return err
					}
					inference.AppendPredictions(&pred, p)
				}
				return nil
			}
			_, err = audio.Stream(ctx, path, audio.Options{Decoder: audio.DecoderLibav}, func(b []float32) error {
				f := cpuTime()
				patcher.Feed(b)
				s.features += cpuTime() - f
				return predict(false)
			})
			if err == nil {
				f := cpuTime()
				patcher.End()
				s.features += cpuTime() - f
				err = predict(true)
			}
			if err != nil {
				return false, fmt.Errorf("%s: %w", path, err)
			}
			s.pipeline = cpuTime() - t
			s.peakKiB, _ = peakRSS()
			preds[i] = pred
			if r == 0 && o.scoresOut != "" {
				if err := writeScores(scoreFile(o.scoresOut, path), scoreRows(pred)); err != nil {
					return false, err
				}
			}
			runs[i] = append(runs[i], s)
		}
		if !o.reference {
			continue
		}
		out, err := runReference(files, o)
		if err != nil {
			return false, err
		}
		for i := range files {
			s := &runs[i][r]
			rf := out.Files[i]
			s.ref = stages{ms(rf.DecodeCPUMs), ms(rf.FeaturesCPUMs), ms(rf.InferenceCPUMs)}
			s.refPeak = out.PeakRssKiB
			if s.refDiff, err = predDiff(preds[i], rf); err != nil {
				return false, fmt.Errorf("%s: %w", files[i], err)
			}
		}
	}
	printStreamed(files, runs, o)
	if o.scoresAgainst == "" {
		return true, nil
	}
	return printScoreDiffs(files, o)
}

// printScoreDiffs compares the scores written to o.scoresOut with those in
// o.scoresAgainst, file by file; ok is false when a pooled mean or spread
// differs by more than scoreBar.
func printScoreDiffs(files []string, o streamedOptions) (ok bool, err error) {
	ok = true
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nfile\tpatches\tmax |Δscore|\tmax |Δpooled mean|\tmax |Δspread|\t\n")
	for _, path := range files {
		now, err := readScores(scoreFile(o.scoresOut, path))
		if err != nil {
			return false, err
		}
		before, err := readScores(scoreFile(o.scoresAgainst, path))
		if err != nil {
			return false, err
		}
		d, err := compareScores(now, before)
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		if d.mean > scoreBar || d.spread > scoreBar {
			ok = false
		}
		fmt.Fprintf(w, "%s\t%d\t%.1e\t%.1e\t%.1e\t\n", filepath.Base(path), len(now), d.patch, d.mean, d.spread)
	}
	w.Flush()
	fmt.Printf("scores against %s: %s (pooled means and spreads within %.0e)\n", o.scoresAgainst, okStr(ok), scoreBar)
	return ok, nil
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// runReference runs reference.js once over files.
func runReference(files []string, o streamedOptions) (refOutput, error) {
	args := []string{o.ref, "--models", o.models, "--batch", strconv.Itoa(o.batch)}
	if !o.refArena {
		args = append(args, "--no-cpu-arena")
	}
	cmd := exec.Command(o.node, append(args, files...)...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	var out refOutput
	if err := cmd.Run(); err != nil {
		return out, fmt.Errorf("reference (%s %s): %w", o.node, o.ref, err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return out, fmt.Errorf("reference output: %w", err)
	}
	if len(out.Files) != len(files) {
		return out, fmt.Errorf("reference returned %d files, want %d", len(out.Files), len(files))
	}
	return out, nil
}

// printStreamed prints the medians over the rounds, per file and over all
// files (the sums of the medians).
func printStreamed(files []string, runs [][]streamedRun, o streamedOptions) {
	median := func(i int, f func(streamedRun) time.Duration) time.Duration {
		v := make([]time.Duration, 0, len(runs[i]))
		for _, s := range runs[i] {
			v = append(v, f(s))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	cols := []struct {
		name string
		f    func(streamedRun) time.Duration
		ref  bool
	}{
		{"ffmpeg decode", func(s streamedRun) time.Duration { return s.ffmpegDecode }, false},
		{"libav decode", streamedRun.decode, false},
		{"features", func(s streamedRun) time.Duration { return s.features }, false},
		{"inference", func(s streamedRun) time.Duration { return s.inference }, false},
		{"pipeline", func(s streamedRun) time.Duration { return s.pipeline }, false},
		{"ref decode", func(s streamedRun) time.Duration { return s.ref.decode }, true},
		{"ref features", func(s streamedRun) time.Duration { return s.ref.features }, true},
		{"ref inference", func(s streamedRun) time.Duration { return s.ref.inference }, true},
		{"ref total", func(s streamedRun) time.Duration { return s.ref.total() }, true},
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "file\taudio s\t")
	for _, c := range cols {
		if !c.ref || o.reference {
			fmt.Fprintf(w, "%s ms/s\t", c.name)
		}
	}
	fmt.Fprint(w, "× real time\t")
	if o.reference {
		fmt.Fprint(w, "ref × real time\tours/ref\tmax |Δpred|\t")
	}
	fmt.Fprintln(w, "peak RSS MiB\t")
	sums := make([]time.Duration, len(cols))
	var audioTotal, worst float64
	var peak, refPeak int64
	for i, path := range files {
		sec := runs[i][0].seconds
		audioTotal += sec
		fmt.Fprintf(w, "%s\t%.0f\t", filepath.Base(path), sec)
		med := make([]time.Duration, len(cols))
		for j, c := range cols {
			med[j] = median(i, c.f)
			sums[j] += med[j]
			if !c.ref || o.reference {
				fmt.Fprintf(w, "%.2f\t", med[j].Seconds()*1000/sec)
			}
		}
		fmt.Fprintf(w, "%.0f\t", sec/med[4].Seconds())
		var p int64
		d := 0.0
		for _, s := range runs[i] {
			p = max(p, s.peakKiB)
			refPeak = max(refPeak, s.refPeak)
			d = math.Max(d, s.refDiff)
		}
		peak, worst = max(peak, p), math.Max(worst, d)
		if o.reference {
			fmt.Fprintf(w, "%.1f\t%.1f\t%.1e\t", sec/med[8].Seconds(), med[8].Seconds()/med[4].Seconds(), d)
		}
		fmt.Fprintf(w, "%.0f\t\n", float64(p)/1024)
	}
	fmt.Fprintf(w, "all\t%.0f\t", audioTotal)
	for j, c := range cols {
		if !c.ref || o.reference {
			fmt.Fprintf(w, "%.2f\t", sums[j].Seconds()*1000/audioTotal)
		}
	}
	fmt.Fprintf(w, "%.0f\t", audioTotal/sums[4].Seconds())
	if o.reference {
		fmt.Fprintf(w, "%.1f\t%.1f\t%.1e\t", audioTotal/sums[8].Seconds(), sums[8].Seconds()/sums[4].Seconds(), worst)
	}
	fmt.Fprintf(w, "%.0f\t\n", float64(peak)/1024)
	w.Flush()
	fmt.Printf("\nCPU time of the process tree per second of audio, medians of %d interleaved rounds; GOMAXPROCS=%d, ONNX Runtime 1 thread, batch %d\n",
		o.rounds, runtime.GOMAXPROCS(0), o.batch)
	if o.reference {
		fmt.Printf("reference: one node process a round (essentia.js features, onnxruntime-node, ffmpeg decode), whole tracks; its peak RSS %.0f MiB\n",
			float64(refPeak)/1024)
	}
}
