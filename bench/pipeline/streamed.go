package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/adapters/features"
	"github.com/nomarr/nomarr/adapters/inference"
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
	ffmpegDecode, libavDecode, features, pipeline time.Duration
	seconds                                       float64
	peakKiB                                       int64
}

// runStreamed measures, per file and interleaved over rounds, the CPU time
// of decoding with ffmpeg and with libav, of the features, and of the whole
// streamed pipeline (libav decode → Patcher → chunked Predict), and the
// peak RSS of the streamed pipeline; it prints the medians.
func runStreamed(files []string, m *inference.Models, rounds int) error {
	ctx := context.Background()
	runs := make([][]streamedRun, len(files))
	ext := features.NewExtractor()
	patcher := features.NewPatcher(ext)
	chunk := m.ChunkPatches()
	var buf []float32
	for r := 0; r < rounds; r++ {
		for i, path := range files {
			var s streamedRun
			discard := func([]float32) error { return nil }
			t := cpuTime()
			n, err := audio.Stream(ctx, path, audio.Options{Decoder: audio.DecoderFFmpeg}, discard)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			s.ffmpegDecode = cpuTime() - t
			s.seconds = float64(n) / audio.SampleRate
			t = cpuTime()
			if _, err := audio.Stream(ctx, path, audio.Options{Decoder: audio.DecoderLibav}, discard); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			s.libavDecode = cpuTime() - t
			_ = resetPeakRSS()
			t = cpuTime()
			patcher.Reset()
			var feat time.Duration
			predict := func(all bool) error {
				for patcher.Ready() >= chunk || all && patcher.Ready() > 0 {
					var k int
					buf, k = patcher.AppendReady(buf[:0], chunk)
					if _, err := m.Predict(buf, k); err != nil {
						return err
					}
				}
				return nil
			}
			_, err = audio.Stream(ctx, path, audio.Options{Decoder: audio.DecoderLibav}, func(b []float32) error {
				f := cpuTime()
				patcher.Feed(b)
				feat += cpuTime() - f
				return predict(false)
			})
			if err == nil {
				patcher.End()
				err = predict(true)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			s.pipeline = cpuTime() - t
			s.features = feat
			s.peakKiB, _ = peakRSS()
			runs[i] = append(runs[i], s)
		}
	}
	median := func(i int, f func(streamedRun) time.Duration) time.Duration {
		v := make([]time.Duration, 0, len(runs[i]))
		for _, s := range runs[i] {
			v = append(v, f(s))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "file\taudio s\tffmpeg decode ms/s\tlibav decode ms/s\tfeatures ms/s\tpipeline ms/s\tpipeline × real time\tpeak RSS MiB\t")
	var audioTotal float64
	var pipeTotal time.Duration
	for i, path := range files {
		sec := runs[i][0].seconds
		per := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()*1000/sec) }
		p := median(i, func(s streamedRun) time.Duration { return s.pipeline })
		audioTotal += sec
		pipeTotal += p
		var peak int64
		for _, s := range runs[i] {
			peak = max(peak, s.peakKiB)
		}
		fmt.Fprintf(w, "%s\t%.0f\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t\n", path, sec,
			per(median(i, func(s streamedRun) time.Duration { return s.ffmpegDecode })),
			per(median(i, func(s streamedRun) time.Duration { return s.libavDecode })),
			per(median(i, func(s streamedRun) time.Duration { return s.features })),
			per(p), sec/p.Seconds(), float64(peak)/1024)
	}
	fmt.Fprintf(w, "all\t%.0f\t\t\t\t%.2f\t%.0f\t\t\n", audioTotal, pipeTotal.Seconds()*1000/audioTotal, audioTotal/pipeTotal.Seconds())
	return w.Flush()
}
