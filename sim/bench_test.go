package sim_test

// Simulator throughput:
//
//	go test -run '^$' -bench Sim -benchtime 1x ./sim
//	go test -run '^$' -bench SimDay -benchtime 1x -cpu 1 -cpuprofile cpu.out ./sim
//
// Metrics: sim-s/wall-s (simulated seconds per wall-clock second; target
// >= 100000 on one core for BenchmarkSimDay), events/s (simulation events
// processed per wall second), MiB (peak heap in use, sampled during the run;
// target < 200) and sys-MiB (memory obtained from the OS by the end).

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/sim"
)

// benchScenario is a library of `files` files of ~jobTime each for
// `workers` workers over `d`, with a fault every `every`, cycling through
// crash, hang, GPU down for 1 min, store down for 30 s and a bad frame, on
// the workers in turn. The cycle keeps worker deaths (a crash, a hang
// killed hang_after later) away from the store outages.
func benchScenario(name string, workers, files int, jobTime, d, every time.Duration) *sim.Scenario {
	sc := &sim.Scenario{
		Name:      name,
		Seed:      1,
		Duration:  sim.Duration(d),
		Config:    map[string]any{"workers": workers, "gpu": true},
		Instances: []string{"a"},
		Library:   sim.Library{Files: files, JobTime: sim.Duration(jobTime)},
	}
	// A few files a little longer or shorter, so that the workers do not
	// move in lock-step.
	sc.Library.Overrides = map[string]sim.FileSpec{}
	for i := 0; i < files; i += 97 {
		jt := sim.Duration(jobTime + time.Duration(i%7-3)*time.Second)
		sc.Library.Overrides[sim.FileKey(i)] = sim.FileSpec{JobTime: &jt}
	}
	n := 0
	for at := every; at < d; at += every {
		w := fmt.Sprintf("worker:discovery:%d", (n/5)%workers)
		f := sim.Fault{At: sim.Duration(at)}
		switch n % 5 {
		case 0:
			f.Crash = w
		case 1:
			f.Hang = w
		case 2:
			f.GPU, f.For = "down", sim.Duration(time.Minute)
		case 3:
			f.Store, f.For = "down", sim.Duration(30*time.Second)
		case 4:
			f.Inject, f.Frame = w, frameKinds[(n/5)%len(frameKinds)]
		}
		sc.Faults = append(sc.Faults, f)
		n++
	}
	return sc
}

// heapSampler records the peak HeapInuse while a run goes on.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	s.sample()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *heapSampler) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.peak = max(s.peak, m.HeapInuse)
}

func (s *heapSampler) finish() uint64 {
	close(s.stop)
	s.done.Wait()
	s.sample()
	return s.peak
}

func runBench(b *testing.B, sc *sim.Scenario, minTagged int) {
	b.ReportAllocs()
	var simulated time.Duration
	var events int64
	var peak uint64
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		w, err := sim.New(sc, sim.Options{NoRetain: true})
		if err != nil {
			b.Fatal(err)
		}
		hs := startHeapSampler()
		b.StartTimer()
		start := time.Now()
		res := w.Run()
		wall += time.Since(start)
		b.StopTimer()
		peak = max(peak, hs.finish())
		if res.Simulated != sc.Duration.D() {
			b.Fatalf("run ended at %s, want %s", res.Simulated, sc.Duration.D())
		}
		if res.Summary.Tagged < minTagged {
			var sum strings.Builder
			res.WriteSummary(&sum)
			b.Fatalf("only %d of %d files tagged (want >= %d): the benchmark no longer measures a working system\n%s",
				res.Summary.Tagged, res.Summary.Files, minTagged, sum.String())
		}
		if i == 0 {
			b.Logf("%s: %d of %d files tagged, %d failed, %d restarts, failed workers: %v, %d events, %d store ops",
				sc.Name, res.Summary.Tagged, res.Summary.Files, len(res.Summary.FailedFiles), res.Summary.Restarts,
				res.Summary.FailedWorkers, res.Events, res.Summary.StoreOps)
		}
		simulated += res.Simulated
		events += res.Events
		b.StartTimer()
	}
	b.ReportMetric(simulated.Seconds()/wall.Seconds(), "sim-s/wall-s")
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	b.ReportMetric(float64(peak)/(1<<20), "MiB")
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.Sys)/(1<<20), "sys-MiB")
}

// BenchmarkSimDay: 8 workers, 10,000 files of ~60 s (75,000 worker-seconds
// ≈ 21 h of work for 8 workers), 24 simulated hours, a fault every 3 min.
func BenchmarkSimDay(b *testing.B) {
	sc := benchScenario("bench-day", 8, 10_000, 60*time.Second, 24*time.Hour, 5*time.Minute)
	runBench(b, sc, 9_000)
}

// BenchmarkSimHour: 4 workers, 1,000 files of ~10 s, 1 simulated hour, a
// fault every 3 min.
func BenchmarkSimHour(b *testing.B) {
	sc := benchScenario("bench-hour", 4, 1_000, 10*time.Second, time.Hour, 3*time.Minute)
	runBench(b, sc, 900)
}
