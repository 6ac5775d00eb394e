// Package realproc runs scenario files with real worker processes, the real
// SQLite store and real signals (`nomarr drill`), and compares what happened
// with the simulator's trace of the same file: the same status transitions,
// restarts, kills and failures, in the same order, at times within a
// tolerance. Real and simulated behaviour must not drift apart.
package realproc

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/sim"
)

// tolerance is how far a real event may be from its simulated twin.
const tolerance = 800 * time.Millisecond

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nomarr-realproc")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "nomarr")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/nomarr/nomarr/cmd/nomarr").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building nomarr: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type summary struct {
	Files         int               `json:"files"`
	Tagged        int               `json:"tagged"`
	Failed        int               `json:"failed"`
	ClaimsLeft    int               `json:"claims_left"`
	FailedWorkers []string          `json:"failed_workers"`
	Status        map[string]string `json:"status"`
}

type run struct {
	sum    summary
	trace  []sim.Rec
	stderr string
}

func scenario(name string) string { return filepath.Join("..", "..", "scenarios", "real", name) }

// drill plays a scenario for real on the store at db.
func drill(t testing.TB, file, db string) run {
	t.Helper()
	return drillWith(t, binary, file, db, nil)
}

// drillWith plays a scenario with the nomarr binary bin and runs meanwhile,
// once the drill has started, if it is not nil.
func drillWith(t testing.TB, bin, file, db string, meanwhile func()) run {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	cmd := exec.Command(bin, "drill", file, "--db", "sqlite:"+db, "--trace", trace)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err == nil {
		if meanwhile != nil {
			meanwhile()
		}
		err = cmd.Wait()
	}
	if err != nil {
		t.Fatalf("nomarr drill %s: %v\n%s", file, err, stderr.String())
	}
	var r run
	r.stderr = stderr.String()
	if err := json.Unmarshal(stdout.Bytes(), &r.sum); err != nil {
		t.Fatalf("drill summary: %v: %q", err, stdout.String())
	}
	r.trace = readTrace(t, trace)
	return r
}

func readTrace(t testing.TB, path string) []sim.Rec {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sim.Rec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r sim.Rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("trace line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func simulate(t *testing.T, file string) (*sim.Scenario, *sim.Result) {
	t.Helper()
	sc, err := sim.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sc, sim.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 {
		t.Fatalf("simulation of %s fails its expectations: %v", file, res.Failures)
	}
	return sc, res
}

// key is the comparable part of an event.
func key(r sim.Rec) string {
	e := r.Event
	switch e.Event {
	case "restart_scheduled":
		return fmt.Sprintf("restart_scheduled %s %dms", e.Component, e.BackoffMs)
	case "restart", "reset":
		return e.Event + " " + e.Component
	case "failed":
		reason, _, _ := strings.Cut(e.Reason, ":")
		return "failed " + e.Component + " " + reason
	case "kill":
		reason, _, _ := strings.Cut(e.Reason, ":")
		return "kill " + e.Component + " " + reason
	case "quarantined":
		return "quarantined " + e.File
	}
	return ""
}

// keyed returns the comparable events other than status changes, before until.
func keyed(trace []sim.Rec, until time.Duration) []sim.Rec {
	var out []sim.Rec
	for _, r := range trace {
		if time.Duration(r.TMs)*time.Millisecond >= until {
			break
		}
		if r.Event.Event != "status" && key(r) != "" {
			out = append(out, r)
		}
	}
	return out
}

// stable is how long a status must hold to be compared. Statuses come from
// frames (every frame_interval, 200 ms here) sampled by the monitor (every
// 100 ms): a shorter one may be seen in one world and missed in the other.
const stable = time.Second

// statusAt returns the status of comp at ms, per the trace.
func statusAt(trace []sim.Rec, comp string, ms int64) string {
	st := ""
	for _, r := range trace {
		if r.TMs > ms {
			break
		}
		if r.Event.Event == "status" && r.Event.Component == comp {
			st = r.Event.To
		}
	}
	return st
}

// compareStatuses checks that every status held for at least `stable` in one
// trace is also the status of that component in the other, half-way through,
// and returns how many it compared and what did not match.
// pending is not compared: it lasts as long as this machine takes to start
// a process, open the store and load the models, which the simulator models
// as fixed durations (boot_time, model_load); on a loaded machine a real
// start takes a second or more longer.
func compareStatuses(a, b []sim.Rec, aName, bName string, until int64) (n int, bad []string) {
	for i, r := range a {
		if r.Event.Event != "status" || r.TMs >= until || r.Event.To == "pending" {
			continue
		}
		end := until
		for _, x := range a[i+1:] {
			if x.Event.Event == "status" && x.Event.Component == r.Event.Component {
				end = x.TMs
				break
			}
		}
		if time.Duration(end-r.TMs)*time.Millisecond < stable {
			continue
		}
		mid := (r.TMs + end) / 2
		if got := statusAt(b, r.Event.Component, mid); got != r.Event.To && got != "pending" {
			bad = append(bad, fmt.Sprintf("%s is %s from %d to %d ms in the %s trace, but %q at %d ms in the %s trace",
				r.Event.Component, r.Event.To, r.TMs, end, aName, got, mid, bName))
		}
		n++
	}
	return n, bad
}

// comparison is how a real trace matched the simulated one.
type comparison struct {
	keyEvents, statuses int
	worst               time.Duration // largest time difference of twin key events
	bad                 []string      // what did not match; none: the traces agree
}

// compare requires, for each component (and for file events), the same
// sequence of key events, each within tolerance of its twin, and the stable
// statuses to agree. Events of different components that happen at about
// the same time may come in either order.
func compare(sc *sim.Scenario, simTrace, realTrace []sim.Rec) comparison {
	var c comparison
	// Events in the last tolerance before the end may fall on either side.
	until := sc.Duration.D() - tolerance
	s, r := byComponent(keyed(simTrace, until)), byComponent(keyed(realTrace, until))
	for _, comp := range unionKeys(s, r) {
		ss, rs := s[comp], r[comp]
		for i := 0; i < len(ss) || i < len(rs); i++ {
			if i >= len(ss) || i >= len(rs) || key(ss[i]) != key(rs[i]) {
				c.bad = append(c.bad, fmt.Sprintf("%s: real and simulated traces diverge at its event %d:\nsimulated: %s\nreal:      %s",
					comp, i, lines(ss), lines(rs)))
				break
			}
			d := time.Duration(rs[i].TMs-ss[i].TMs) * time.Millisecond
			if d < 0 {
				d = -d
			}
			if d > tolerance {
				c.bad = append(c.bad, fmt.Sprintf("%s: real at %d ms, simulated at %d ms (more than %s apart)", key(ss[i]), rs[i].TMs, ss[i].TMs, tolerance))
			}
			c.worst = max(c.worst, d)
			c.keyEvents++
		}
	}
	// After a stop the real main process exits as soon as its workers are
	// gone, so statuses are compared up to the stop.
	limit := until.Milliseconds()
	for _, r := range simTrace {
		if r.Event.Event == "stop" && r.TMs < limit {
			limit = r.TMs
		}
	}
	n1, bad1 := compareStatuses(simTrace, realTrace, "simulated", "real", limit)
	n2, bad2 := compareStatuses(realTrace, simTrace, "real", "simulated", limit)
	c.statuses = n1 + n2
	c.bad = append(append(c.bad, bad1...), bad2...)
	return c
}

// matchSim plays a scenario for real (drillOne) up to three times, on the
// store at db(attempt) each time, until its trace matches the simulated one,
// and fails t with the mismatches of the last attempt otherwise. Another
// attempt is made only when the machine lost a tenth or more of its CPU
// time to other guests (steal) during the drill: the comparison is of
// timings within 800 ms, which a starved machine cannot keep.
func matchSim(t *testing.T, sc *sim.Scenario, simTrace []sim.Rec, db func(attempt int) string,
	drillOne func(db string) run) (run, string) {
	t.Helper()
	const attempts = 3
	for a := 1; ; a++ {
		path := db(a)
		before := readCPU()
		r := drillOne(path)
		steal := readCPU().stealSince(before)
		c := compare(sc, simTrace, r.trace)
		if len(c.bad) == 0 {
			t.Logf("%d key events match (largest real-vs-simulated difference %s); %d stable statuses agree (CPU steal %.0f%%)",
				c.keyEvents, c.worst, c.statuses, 100*steal)
			return r, path
		}
		if a < attempts && steal >= 0.10 {
			t.Logf("attempt %d: %d mismatches while the machine lost %.0f%% of its CPU to steal; again:\n%s",
				a, len(c.bad), 100*steal, strings.Join(c.bad, "\n"))
			continue
		}
		for _, b := range c.bad {
			t.Error(b)
		}
		t.Logf("attempt %d: CPU steal %.0f%% during the drill", a, 100*steal)
		return r, path
	}
}

// cpuTimes is the machine's CPU time so far (/proc/stat, in ticks): all of
// it and what other guests took (steal).
type cpuTimes struct{ total, steal uint64 }

func readCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	var c cpuTimes
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i < 8 {
			c.total += n
		}
		if i == 7 {
			c.steal = n
		}
	}
	return c
}

// stealSince is the share of CPU time lost to steal since before.
func (c cpuTimes) stealSince(before cpuTimes) float64 {
	if c.total <= before.total {
		return 0
	}
	return float64(c.steal-before.steal) / float64(c.total-before.total)
}

func byComponent(rs []sim.Rec) map[string][]sim.Rec {
	out := map[string][]sim.Rec{}
	for _, r := range rs {
		c := r.Event.Component
		if c == "" {
			c = "files"
		}
		out[c] = append(out[c], r)
	}
	return out
}

func unionKeys(a, b map[string][]sim.Rec) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string][]sim.Rec{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func lines(rs []sim.Rec) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %6d ms  %s", r.TMs, key(r))
	}
	return b.String()
}

func check(t *testing.T, file string) run {
	t.Helper()
	sc, res := simulate(t, file)
	r, _ := matchSim(t, sc, res.Trace, func(int) string { return filepath.Join(t.TempDir(), "nomarr.db") },
		func(db string) run { return drill(t, file, db) })
	return r
}

func TestKillWorkerMidJob(t *testing.T) {
	r := check(t, scenario("kill-worker.yaml"))
	if r.sum.Tagged != r.sum.Files || r.sum.ClaimsLeft != 0 {
		t.Errorf("summary %+v: want every file tagged and no claim left", r.sum)
	}
	// The dead worker's claim is released at once (< 1 s after the SIGKILL).
	var crash, release int64 = -1, -1
	for _, e := range r.trace {
		if e.Event.Event == "fault" && e.Event.Reason == "crash" && crash < 0 {
			crash = e.TMs
		}
		if e.Event.Event == "release" && e.Event.Reason == "worker died" && release < 0 {
			release = e.TMs
		}
	}
	if crash < 0 || release < 0 || release-crash >= 1000 {
		t.Errorf("claim released %d ms after the SIGKILL at %d ms, want < 1000 ms", release-crash, crash)
	} else {
		t.Logf("claim released %d ms after the SIGKILL", release-crash)
	}
}

// Workers run the binary of their main process, even when the file it was
// started from is replaced while it runs (an upgrade): the worker restarted
// after the SIGKILL is the same version, not the file now on disk.
func TestRestartedWorkerRunsTheRunningBinary(t *testing.T) {
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	file := scenario("kill-worker.yaml")
	sc, res := simulate(t, file)
	r, _ := matchSim(t, sc, res.Trace, func(int) string { return filepath.Join(t.TempDir(), "nomarr.db") }, func(db string) run {
		dir := t.TempDir()
		bin := filepath.Join(dir, "nomarr")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return drillWith(t, bin, file, db, func() {
			// The scenario's SIGKILL comes at 2.5 s of the real clock; the
			// binary is replaced well before it, once the drill has started.
			time.Sleep(500 * time.Millisecond)
			next := filepath.Join(dir, "nomarr.next")
			if err := os.WriteFile(next, []byte("#!/bin/sh\necho not this version >&2\nexit 3\n"), 0o755); err != nil {
				t.Error(err)
			}
			if err := os.Rename(next, bin); err != nil {
				t.Error(err)
			}
		})
	})
	if r.sum.Tagged != r.sum.Files || strings.Contains(r.stderr, "not this version") {
		t.Errorf("summary %+v, stderr:\n%s", r.sum, r.stderr)
	}
}

func TestHungWorkerKilled(t *testing.T) {
	r := check(t, scenario("hang.yaml"))
	if r.sum.Tagged != r.sum.Files {
		t.Errorf("summary %+v", r.sum)
	}
}

func TestStopDuringPendingRestart(t *testing.T) {
	r := check(t, scenario("stop-pending-restart.yaml"))
	for _, e := range r.trace {
		if e.Event.Event == "restart" || (e.Event.Event == "spawn" && e.TMs > 1500) {
			t.Errorf("restarted after the stop: %+v", e)
		}
	}
	if r.sum.ClaimsLeft != 0 {
		t.Errorf("%d claims left after a graceful stop", r.sum.ClaimsLeft)
	}
}

func TestPoisonFileQuarantined(t *testing.T) {
	r := check(t, scenario("poison.yaml"))
	if r.sum.Tagged != 4 || r.sum.Failed != 1 || len(r.sum.FailedWorkers) != 0 {
		t.Errorf("summary %+v: want 4 tagged, the poison file failed, no failed worker", r.sum)
	}
}

// A store whose write lock another process holds for longer than
// hang_after stalls every write of the main process (each waits out the
// busy timeout, 5 s) while the workers keep framing: no worker is killed
// for a hang and none fails.
func TestLockedStoreKillsNoWorker(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nomarr.db")
	type hold struct {
		from, to time.Time
		err      error
	}
	locked := make(chan hold, 1)
	go func() {
		from, err := holdWriteLock(db, 6*time.Second)
		locked <- hold{from, time.Now(), err}
	}()
	start := time.Now()
	r := drill(t, scenario("locked-store.yaml"), db)
	ran := time.Since(start)
	h := <-locked
	if h.err != nil {
		t.Fatalf("holding the write lock: %v", h.err)
	}
	for _, e := range r.trace {
		if e.Event.Event == "kill" || e.Event.Event == "failed" {
			t.Errorf("while the store was locked: %+v at %d ms", e.Event, e.TMs)
		}
	}
	if r.sum.Tagged != r.sum.Files || r.sum.ClaimsLeft != 0 || len(r.sum.FailedWorkers) != 0 {
		t.Errorf("summary %+v: want every file tagged, no claim left, no failed worker", r.sum)
	}
	// The main process's writes must have met the lock, or the test proves
	// nothing.
	held := false
	for _, e := range r.trace {
		held = held || (e.Event.Event == "store_error" && strings.Contains(e.Event.Reason, "locked"))
	}
	if !held {
		var errs []string
		for _, e := range r.trace {
			if e.Event.Event == "store_error" {
				errs = append(errs, fmt.Sprintf("%d ms: %s", e.TMs, e.Event.Reason))
			}
		}
		t.Errorf("no store error naming the lock in the trace: the lock was never met (held from %s to %s after the drill's start, which ran %s; store errors: %q)",
			h.from.Sub(start).Round(time.Millisecond), h.to.Sub(start).Round(time.Millisecond), ran.Round(time.Millisecond), errs)
	}
}

// holdWriteLock waits until the drill's workers claim their first file in
// the database at path (its start, scan included, is over: on a loaded
// machine that takes from one to several seconds, and a lock taken at a
// fixed time met either the start's scan, which then failed the drill, or
// too little of the main loop), then holds its write lock (BEGIN
// IMMEDIATE) for hold.
// It returns when it took the lock.
func holdWriteLock(path string, hold time.Duration) (time.Time, error) {
	// Wait for the lock as long as it takes the drill's own writes to end.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return time.Time{}, err
	}
	defer db.Close()
	// Another process's database, polled; this runs beside the drill, off
	// the test's goroutine, so it reports an error rather than fail the
	// test (eventually.True would).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if _, serr := os.Stat(path); serr == nil &&
			db.QueryRow(`SELECT count(*) FROM worker_claims`).Scan(&n) == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			return time.Time{}, errors.New("no claim in the drill's store within 30 s")
		}
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return time.Time{}, err
	}
	took := time.Now()
	time.Sleep(hold) // the lock is held for hold of the real clock, which the drill's loop runs on
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	return took, err
}

// A model load longer than hang_after is a cold start, not a hang: the real
// worker frames while it loads, stays pending (never unhealthy, never
// killed) and tags everything once loaded. The drill's own stop at its end
// (the worker exits, and a check after its exit may see it unhealthy) is
// not part of the cold start.
func TestColdStartLongerThanHangAfter(t *testing.T) {
	r := check(t, scenario("cold-start.yaml"))
	if r.sum.Tagged != r.sum.Files || r.sum.ClaimsLeft != 0 {
		t.Errorf("summary %+v: want every file tagged and no claim left", r.sum)
	}
	for _, e := range r.trace {
		if e.Event.Event == "stop" {
			break
		}
		if e.Event.Event == "kill" || (e.Event.Event == "status" && e.Event.To == "unhealthy") {
			t.Errorf("during a cold start: %+v at %d ms", e.Event, e.TMs)
		}
	}
}

// A worker whose job stops progressing while it keeps framing is killed for
// a stall (never for a hang), twice, and the file is quarantined.
func TestStalledJobKilled(t *testing.T) {
	r := check(t, scenario("stall.yaml"))
	if r.sum.Tagged != 5 || r.sum.Failed != 1 || len(r.sum.FailedWorkers) != 0 || r.sum.ClaimsLeft != 0 {
		t.Errorf("summary %+v: want 5 tagged, the stalled file failed, no failed worker, no claim", r.sum)
	}
	stalls := 0
	for _, e := range r.trace {
		if e.Event.Event == "kill" {
			if !strings.HasPrefix(e.Event.Reason, "stall") {
				t.Errorf("killed for %q at %d ms", e.Event.Reason, e.TMs)
			}
			stalls++
		}
	}
	if stalls != 2 {
		t.Errorf("%d stall kills, want 2", stalls)
	}
}

func TestPauseResume(t *testing.T) {
	r := check(t, scenario("pause-resume.yaml"))
	if r.sum.Tagged != r.sum.Files {
		t.Errorf("summary %+v", r.sum)
	}
}

// A crash loop marks the worker failed; it stays failed when the main
// process starts again on the same store, until a manual reset.
func TestCrashLoopFailedSurvivesRestartUntilReset(t *testing.T) {
	file := scenario("crash-loop.yaml")
	sc, res := simulate(t, file)
	first, db := matchSim(t, sc, res.Trace, func(int) string { return filepath.Join(t.TempDir(), "nomarr.db") },
		func(db string) run { return drill(t, file, db) })
	if len(first.sum.FailedWorkers) != 1 || first.sum.FailedWorkers[0] != "worker:discovery:0" {
		t.Fatalf("first run: failed workers %v", first.sum.FailedWorkers)
	}
	second := drill(t, scenario("after-crash-loop.yaml"), db)
	var persisted, spawnBeforeReset, spawnAfterReset bool
	reset := int64(-1)
	for _, e := range second.trace {
		ev := e.Event
		switch {
		case ev.Event == "failed" && ev.Component == "worker:discovery:0" && strings.Contains(ev.Reason, "persisted"):
			persisted = true
		case ev.Event == "reset":
			reset = e.TMs
		case ev.Event == "spawn" && ev.Component == "worker:discovery:0":
			if reset < 0 {
				spawnBeforeReset = true
			} else {
				spawnAfterReset = true
			}
		}
	}
	if !persisted || spawnBeforeReset || !spawnAfterReset {
		t.Errorf("second run: persisted failure %v, spawned before reset %v, spawned after reset %v", persisted, spawnBeforeReset, spawnAfterReset)
	}
	if got := second.sum.Status["worker:discovery:0"]; len(second.sum.FailedWorkers) != 0 {
		t.Errorf("after the reset the worker is %s, failed workers %v", got, second.sum.FailedWorkers)
	}

	// The same through the CLI with no daemon running: fail it again, then
	// `nomarr workers reset` clears the persisted state for the next start.
	third := drill(t, scenario("crash-loop.yaml"), db)
	if len(third.sum.FailedWorkers) != 1 {
		t.Fatalf("third run: failed workers %v", third.sum.FailedWorkers)
	}
	out, err := exec.Command(binary, "workers", "reset", "worker:discovery:0", "--db", "sqlite:"+db, "--node", "a",
		"--http-addr", freeAddr(t)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done in the store") {
		t.Fatalf("nomarr workers reset: %v\n%s", err, out)
	}
	fourth := drill(t, scenario("stop-pending-restart.yaml"), db)
	for _, e := range fourth.trace {
		if e.Event.Event == "failed" {
			t.Errorf("still failed after nomarr workers reset: %+v", e)
		}
	}
}

// killMainMidJob runs a drill with two workers (lease_ttl 3 s) over library
// and SIGKILLs its main process once both workers are mid-job. It
// returns the store, the trace and the time of the kill. With a non-nil
// stderr (a pipe the workers inherit) it returns only once the orphaned
// workers have exited too; with nil they may still run.
func killMainMidJob(t *testing.T, library string, stderr io.Writer) (db, trace string, killedAt time.Time) {
	t.Helper()
	return killMainMidJobWith(t, "", library, stderr)
}

// killMainMidJobWith is killMainMidJob with more configuration keys (", k: v…").
func killMainMidJobWith(t *testing.T, config, library string, stderr io.Writer) (db, trace string, killedAt time.Time) {
	t.Helper()
	dir := t.TempDir()
	db, trace = filepath.Join(dir, "nomarr.db"), filepath.Join(dir, "trace.jsonl")
	file := filepath.Join(dir, "main-killed.yaml")
	body := `name: real-main-killed
duration: 60s
config: {workers: 2, frame_interval: 200ms, stale_after: 1s, hang_after: 3s, check_interval: 100ms, lease_ttl: 3s, cleanup_period: 1s, idle_poll_min: 100ms, idle_poll_max: 500ms` + config + `}
library: ` + library + "\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "drill", file, "--db", "sqlite:"+db, "--trace", trace)
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Both workers are mid-job once both are healthy (each claims at once,
	// and a job takes seconds): wait for that rather than for a fixed time,
	// which a busy machine may not honour.
	// The trace is another process's file: it is polled.
	healthy := map[string]bool{}
	defer func() {
		if t.Failed() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Logf("healthy: %v", healthy)
		}
	}()
	eventually.True(t, 20*time.Second, "both workers healthy in the drill's trace", func() bool {
		if b, err := os.ReadFile(trace); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				var r sim.Rec
				if json.Unmarshal([]byte(l), &r) == nil && r.Event.Event == "status" && r.Event.To == "healthy" {
					healthy[r.Event.Component] = true
				}
			}
		}
		return len(healthy) >= 2
	})
	// Into the job, past its model load (200 ms): the scenario's job
	// times run on the real clock.
	time.Sleep(300 * time.Millisecond)
	killedAt = time.Now()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return db, trace, killedAt
}

// waitWorkersGone waits, up to limit, until both workers the trace spawned
// have exited.
func waitWorkersGone(t *testing.T, trace string, limit time.Duration) {
	t.Helper()
	var pids []int
	for _, e := range readTrace(t, trace) {
		if e.Event.Event == "spawn" {
			pids = append(pids, e.Event.PID)
		}
	}
	if len(pids) != 2 {
		t.Fatalf("spawned %v", pids)
	}
	// Orphans are no child of the test's: their ends are polled.
	eventually.True(t, limit, fmt.Sprintf("workers %v to exit after the main process died", pids), func() bool {
		return !slices.ContainsFunc(pids, alive)
	})
}

// SIGKILL of the main process: every worker finishes its current job,
// completes its claim, exits 0, and no process is left behind.
func TestMainProcessKilled(t *testing.T) {
	var stderr bytes.Buffer
	db, trace, killedAt := killMainMidJob(t, "{files: 20, job_time: 2s, model_load: 200ms}", &stderr)
	waitWorkersGone(t, trace, 10*time.Second)
	t.Logf("workers gone %s after the main process was killed", time.Since(killedAt).Round(10*time.Millisecond))
	ctx := context.Background()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Claimed != 0 || c.Tagged < 2 {
		t.Errorf("after the main process died: %+v; want no claim left and each worker's job completed", c)
	}
	logs := stderr.String()
	exits := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg="worker exiting"`) && strings.Contains(l, "code=0") && strings.Contains(l, `reason="main process gone"`) {
			exits++
		}
	}
	if exits != 2 {
		t.Errorf("want 2 workers exiting 0 because the main process is gone; logs:\n%s", logs)
	}
}

// TestOrphanAbandonsStalledJob: the main process is killed while both
// workers are on jobs that never progress again (a hung inference call).
// With no owner left to kill them, each worker gives its job up after
// stall_after (2 s) without progress: it exits and stops renewing its
// lease, so the claims run out and a cleanup (as another instance's would)
// frees both files. Before, the orphans renewed their leases for good.
func TestOrphanAbandonsStalledJob(t *testing.T) {
	db, trace, killedAt := killMainMidJobWith(t, ", stall_after: 2s",
		"{files: 2, job_time: 1s, model_load: 200ms, overrides: {f0000: {stall: true}, f0001: {stall: true}}}", nil)
	waitWorkersGone(t, trace, 15*time.Second)
	gone := time.Now()
	t.Logf("orphans gone %s after the main process was killed", gone.Sub(killedAt).Round(10*time.Millisecond))
	if d := gone.Sub(killedAt); d < 2*time.Second {
		t.Fatalf("orphans left %s after the main process died, before stall_after", d)
	}
	ctx := context.Background()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if c, err := st.Counts(ctx); err != nil || c.Claimed != 2 || c.Tagged != 0 {
		t.Fatalf("after the orphans left: %+v %v; want both claims left to expire", c, err)
	}
	// The leases run out on the real clock: lease_ttl 3 s, no more renewals.
	time.Sleep(time.Until(gone.Add(3500 * time.Millisecond)))
	removed, err := st.CleanupClaims(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Fatalf("cleanup after lease_ttl removed %+v, want both abandoned claims", removed)
	}
}

// TestOrphanKeepsLease: the main process is killed 1.5 s into 8 s jobs with
// lease_ttl 3 s. Nobody renews the workers' leases but the workers
// themselves; 5 s after the kill — past any lease the main process gave —
// both claims are live and a cleanup (as another instance's would) deletes
// neither; then the workers complete their files and exit.
func TestOrphanKeepsLease(t *testing.T) {
	// No stderr capture: cmd.Wait would wait for the orphans, which
	// inherit the pipe.
	db, _, killedAt := killMainMidJob(t, "{files: 4, job_time: 8s, model_load: 200ms}", nil)
	ctx := context.Background()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Past any lease the main process gave (3 s), on the real clock the
	// leases are judged by.
	time.Sleep(time.Until(killedAt.Add(5 * time.Second)))
	c, err := st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Claimed != 2 || c.Tagged != 0 {
		t.Fatalf("5 s after the main process died: %+v; want both jobs still claimed", c)
	}
	gone, err := st.CleanupClaims(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 0 {
		t.Fatalf("cleanup 5 s after the main process died removed %+v: the orphans' leases expired", gone)
	}
	eventually.True(t, 15*time.Second, "the orphans to release their claims (20 s after the main process died)", func() bool {
		c, err = st.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c.Claimed == 0
	})
	if c.Tagged != 2 {
		t.Errorf("after the orphans finished: %+v; want their 2 files tagged", c)
	}
}

// alive reports whether pid runs (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}
