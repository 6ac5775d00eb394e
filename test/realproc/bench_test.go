package realproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func writeScenario(b testing.TB, body string) string {
	p := filepath.Join(b.TempDir(), "bench.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func percentile(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

// BenchmarkKillToRediscoverable: SIGKILL a worker mid-job again and again and
// measure how long until its file is claimable again (the owner's release of
// the dead worker's claim). Target: p99 < 1 s.
func BenchmarkKillToRediscoverable(b *testing.B) {
	const kills = 25
	var faults strings.Builder
	for i := 0; i < kills; i++ {
		fmt.Fprintf(&faults, "  - {at: %dms, crash: \"worker:discovery:0\"}\n", 1500+i*900)
	}
	file := writeScenario(b, `name: bench-kill
duration: `+strconv.Itoa(3+kills)+`s
config: {workers: 2, frame_interval: 200ms, stale_after: 1s, hang_after: 3s, check_interval: 100ms, lease_ttl: 3s, cleanup_period: 1s, idle_poll_min: 100ms, idle_poll_max: 300ms, backoff_base: 100ms, backoff_max: 200ms, window_limit: 1000, lifetime_limit: 1000, quarantine_after: 1000}
library: {files: 200, job_time: 5s, model_load: 100ms}
faults:
`+faults.String())
	var lat []float64
	for i := 0; i < b.N; i++ {
		r := drill(b, file, filepath.Join(b.TempDir(), "nomarr.db"))
		var crash int64 = -1
		for _, e := range r.trace {
			switch {
			case e.Event.Event == "fault" && e.Event.Reason == "crash":
				crash = e.TMs
			case e.Event.Event == "release" && e.Event.Reason == "worker died" && crash >= 0:
				lat = append(lat, float64(e.TMs-crash))
				crash = -1
			}
		}
	}
	if len(lat) < kills/2 {
		b.Fatalf("only %d releases measured", len(lat))
	}
	b.ReportMetric(percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(float64(len(lat)), "kills")
}

// BenchmarkSupervisorCPU: the main process's CPU use with 32 idle workers
// framing every second, measured from /proc over 20 s. Target: < 2 % of
// one core.
func BenchmarkSupervisorCPU(b *testing.B) {
	const window = 20 * time.Second
	file := writeScenario(b, `name: bench-cpu
duration: 30s
config: {workers: 32, frame_interval: 1s, stale_after: 3s, hang_after: 10s, startup_timeout: 30s}
library: {files: 0}
`)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(binary, "drill", file, "--db", "sqlite:"+filepath.Join(b.TempDir(), "nomarr.db"))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// The steady state is measured: 5 s of the real clock for all 32
		// to spawn and frame, then a window of it.
		time.Sleep(5 * time.Second)
		t0, w0 := cpuTicks(b, cmd.Process.Pid), time.Now()
		time.Sleep(window)
		t1, w1 := cpuTicks(b, cmd.Process.Pid), time.Now()
		_ = cmd.Wait()
		const hz = 100 // USER_HZ
		pct := float64(t1-t0) / hz / w1.Sub(w0).Seconds() * 100
		b.ReportMetric(pct, "cpu-%")
	}
}

// cpuTicks returns utime+stime of pid (not its children).
func cpuTicks(b testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
