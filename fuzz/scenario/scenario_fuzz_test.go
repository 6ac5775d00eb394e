// Package scenariofuzz fuzzes the scenario parser of sim (docs/design.md §12) and,
// for small scenarios, the simulator with its safety invariants.
//
// Properties:
//   - sim.Parse never panics, whatever the bytes;
//   - it is deterministic: the same bytes give the same error text, or equal
//     scenarios (reflect.DeepEqual, with NaN equal to itself);
//   - a scenario it accepts is valid: name set, 0 < duration <= 400 days,
//     files in range, instances named and distinct, every fault with exactly
//     one action inside the run, error_rate in [0, 1], a valid configuration;
//   - a small accepted scenario (files <= 50, duration <= 10 min, sane
//     intervals) runs: sim.Run returns no error, does not panic, finishes in
//     bounded time, reports no safety violation, and gives a byte-identical
//     trace when run twice.
//
// Run: go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 30s ./fuzz/scenario
package scenariofuzz

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/sim"
)

// Limits of the run part: bigger scenarios are only parsed.
const (
	maxRunFiles     = 50
	maxRunDuration  = 10 * time.Minute
	maxRunInstances = 4
	maxRunWorkers   = 16
	maxRunFaults    = 64
	// Any configured interval below this could make a 10-minute run take
	// millions of events; such scenarios are only parsed.
	minRunInterval = 50 * time.Millisecond
	// A run that takes longer than this is reported as a hang (a livelock
	// at one virtual instant, an event storm).
	runTimeout = 60 * time.Second
	// sim.Parse of a few kilobytes takes well under a millisecond.
	parseTimeout = 30 * time.Second
)

var seeds = []string{
	// a valid small scenario
	`name: small
seed: 1
duration: 2m
config: {workers: 2}
library:
  files: 5
  job_time: 10s
faults:
  - {at: 30s, crash: "worker:discovery:0"}
expect:
  all_tagged: true
`,
	// every fault kind, overrides, two instances
	`name: everything
seed: 7
duration: 10m
instances: [a, b]
config: {workers: 3, gpu: true, lease_ttl: 15s}
library:
  files: 30
  job_time: 5s
  model_load: 3s
  boot_time: 200ms
  overrides:
    f0001: {poison: true}
    f0002: {error: transient, fail_times: 2}
    f0003: {error: permanent}
    f0004: {error: service_down, fail_times: 1}
    f0005: {stall: true}
    f0006: {job_time: 3m}
faults:
  - {at: 10s, crash: "worker:discovery:0"}
  - {at: 20s, hang: "worker:discovery:1", instance: b}
  - {at: 30s, gpu: down, for: 1m}
  - {at: 50s, store: slow, for: 20s}
  - {at: 1m, error_rate: 0.2, for: 30s}
  - {at: 70s, inject: "worker:discovery:2", frame: garbage}
  - {at: 75s, inject: "worker:discovery:2", frame: oversized}
  - {at: 80s, inject: "worker:discovery:2", frame: spoofed}
  - {at: 85s, inject: "worker:discovery:2", frame: bad_json}
  - {at: 90s, inject: "worker:discovery:2", frame: missing_field}
  - {at: 2m, pause: true}
  - {at: 150s, resume: true}
  - {at: 3m, reset: "worker:discovery:0"}
  - {at: 4m, restart_main: true, for: 5s}
  - {at: 5m, main: die, instance: b}
  - {at: 6m, kill_instance: true, instance: b}
  - {at: 7m, store: down, for: 20s}
  - {at: 9m, stop: true}
expect:
  violations: 0
  counts: {tagged: ">0"}
  events:
    - {event: fault, after: 10s}
`,
	// invalid YAML
	"name: [unclosed\n  duration: 1m\n\t- :\n",
	// unknown field
	"name: x\nduration: 1m\ncolour: red\n",
	// bad duration
	"name: x\nduration: 5 parsecs\n",
	// a fault with two actions
	"name: x\nduration: 1m\nfaults:\n  - {at: 10s, crash: \"worker:discovery:0\", stop: true}\n",
	// JSON form
	`{"name": "json", "seed": 2, "duration": "2m", "config": {"workers": 1},
 "library": {"files": 3, "job_time": "5s"},
 "faults": [{"at": "30s", "crash": "worker:discovery:0"}, {"at": "1m", "stop": true}]}`,
	// empty
	"",
	// huge numbers
	"name: x\nseed: 99999999999999999999999\nduration: 1m\nlibrary: {files: 9223372036854775807}\n",
	"name: x\nduration: 2562047h47m16.854775807s\nconfig: {workers: 1e300}\n",
	// negative duration
	"name: x\nduration: -5s\n",
	// several documents
	"name: a\nduration: 1m\n---\nname: b\nduration: 2m\n",
	// an alias bomb
	"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nname: *c\n",
}

func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkInput)
}

// checkInput checks every property on one input.
func checkInput(t *testing.T, data []byte) {
	sc, err := parse(t, data)
	sc2, err2 := parse(t, data)
	if (err == nil) != (err2 == nil) {
		t.Fatalf("Parse is not deterministic: %v, then %v", err, err2)
	}
	if err != nil {
		if err.Error() != err2.Error() {
			t.Fatalf("Parse error is not deterministic:\n  %v\n  %v", err, err2)
		}
		if sc != nil {
			t.Fatalf("Parse returned a scenario with an error: %v", err)
		}
		return
	}
	if sc == nil {
		t.Fatal("Parse returned neither a scenario nor an error")
	}
	if !reflect.DeepEqual(sc, sc2) && !equal(reflect.ValueOf(sc), reflect.ValueOf(sc2)) {
		t.Fatalf("Parse is not deterministic:\n  %#v\n  %#v", sc, sc2)
	}
	validated(t, sc)
	if !runnable(sc) {
		return
	}
	t1 := run(t, sc, data)
	t2 := run(t, sc2, data)
	if !t1.equal(t2) {
		t.Fatalf("the same scenario gave two different traces (%d and %d lines); first difference at line %d:\n%s",
			t1.lines, t2.lines, firstDiff(t1.prefix, t2.prefix), data)
	}
}

// parse runs sim.Parse under a watchdog, so that a parser that never
// returns is reported with its input instead of stalling the fuzzer.
func parse(t *testing.T, data []byte) (*sim.Scenario, error) {
	t.Helper()
	type outcome struct {
		sc  *sim.Scenario
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		sc, err := sim.Parse(data)
		done <- outcome{sc, err}
	}()
	select {
	case o := <-done:
		return o.sc, o.err
	case <-time.After(parseTimeout):
		t.Fatalf("sim.Parse did not return within %s for:\n%s", parseTimeout, data)
		return nil, nil
	}
}

// validated checks what an accepted scenario must satisfy.
func validated(t *testing.T, sc *sim.Scenario) {
	t.Helper()
	if sc.Name == "" {
		t.Error("accepted a scenario without a name")
	}
	if sc.Duration <= 0 || sc.Duration.D() > 400*24*time.Hour {
		t.Errorf("accepted duration %s", sc.Duration.D())
	}
	if sc.Library.Files < 0 || sc.Library.Files > sim.MaxFiles {
		t.Errorf("accepted library.files %d", sc.Library.Files)
	}
	for _, d := range []sim.Duration{sc.Library.JobTime, sc.Library.ModelLoad, sc.Library.BootTime} {
		if d < 0 {
			t.Errorf("accepted a negative library time %s", d.D())
		}
	}
	for k, o := range sc.Library.Overrides {
		if o.JobTime != nil && *o.JobTime < 0 {
			t.Errorf("override %s: accepted a negative job_time", k)
		}
		if o.FailTimes < 0 {
			t.Errorf("override %s: accepted fail_times %d", k, o.FailTimes)
		}
	}
	if len(sc.Instances) == 0 {
		t.Error("accepted scenario has no instance")
	}
	names := map[string]bool{}
	for _, in := range sc.Instances {
		if in == "" || names[in] {
			t.Errorf("accepted instance name %q (empty or duplicate)", in)
		}
		names[in] = true
	}
	settings, err := sc.Settings()
	if err != nil {
		t.Errorf("accepted a scenario whose settings are invalid: %v", err)
	}
	if settings.Workers < 1 {
		t.Errorf("accepted workers = %d", settings.Workers)
	}
	for i, f := range sc.Faults {
		if n := actions(f); n != 1 {
			t.Errorf("fault %d (line %d): accepted with %d actions", i, f.Line, n)
		}
		if f.At < 0 || f.At > sc.Duration || f.For < 0 {
			t.Errorf("fault %d (line %d): accepted at=%s for=%s in a %s run", i, f.Line, f.At.D(), f.For.D(), sc.Duration.D())
		}
		if f.Instance != "" && !names[f.Instance] {
			t.Errorf("fault %d (line %d): accepted unknown instance %q", i, f.Line, f.Instance)
		}
		if math.IsNaN(f.ErrorRate) || f.ErrorRate < 0 || f.ErrorRate > 1 {
			t.Errorf("fault %d (line %d): accepted error_rate %v", i, f.Line, f.ErrorRate)
		}
	}
}

// actions counts a fault's action keys, independently of sim's own count.
func actions(f sim.Fault) int {
	n := 0
	for _, set := range []bool{f.Crash != "", f.Hang != "", f.GPU != "", f.Store != "", f.ErrorRate != 0, f.Main != "",
		f.KillInstance, f.RestartMain, f.Stop, f.Pause, f.Resume, f.Reset != "", f.Inject != ""} {
		if set {
			n++
		}
	}
	return n
}

// runnable reports whether sc is small enough to simulate inside a fuzz
// iteration.
func runnable(sc *sim.Scenario) bool {
	if sc.Library.Files > maxRunFiles || sc.Duration.D() > maxRunDuration ||
		len(sc.Instances) > maxRunInstances || len(sc.Faults) > maxRunFaults {
		return false
	}
	c, err := sc.Settings()
	if err != nil || c.Workers > maxRunWorkers {
		return false
	}
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		if d, ok := v.Field(i).Interface().(time.Duration); ok && d < minRunInterval {
			return false
		}
	}
	return true
}

// run simulates sc with the safety invariants on and returns a digest of its
// trace.
func run(t *testing.T, sc *sim.Scenario, data []byte) *traceDigest {
	t.Helper()
	type outcome struct {
		res   *sim.Result
		err   error
		panic any
	}
	tr := newTraceDigest()
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			o.panic = recover()
			done <- o
		}()
		o.res, o.err = sim.Run(sc, sim.Options{Check: true, Trace: tr, NoRetain: true})
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(runTimeout):
		t.Fatalf("sim.Run did not finish within %s (a hang or an event storm) for:\n%s", runTimeout, data)
	}
	if o.panic == errLivelock {
		t.Fatalf("sim.Run wrote more than %d trace lines at one instant (a livelock: virtual time stopped); last line:\n  %s\nscenario:\n%s",
			maxSameInstant, tr.last, data)
	}
	if o.panic == errEventStorm {
		t.Fatalf("sim.Run wrote more than %d trace lines (an event storm); last line:\n  %s\nscenario:\n%s",
			maxTraceLines, tr.last, data)
	}
	if o.panic != nil {
		t.Fatalf("sim.Run panicked: %v\nscenario:\n%s", o.panic, data)
	}
	if o.err != nil {
		t.Fatalf("sim.Run rejected a scenario that Parse accepted: %v\nscenario:\n%s", o.err, data)
	}
	if len(o.res.Violations) > 0 {
		t.Fatalf("%d safety violation(s):\n  %s\nscenario:\n%s", len(o.res.Violations),
			strings.Join(o.res.Violations, "\n  "), data)
	}
	return tr
}

// maxTraceLines bounds a run: a scenario within the run limits writes a few
// thousand lines; far more means the simulation is stuck. maxSameInstant
// bounds the lines written at one virtual instant: more means virtual time
// no longer advances.
const (
	maxTraceLines  = 1_000_000
	maxSameInstant = 20_000
)

var (
	errEventStorm = errors.New("event storm")
	errLivelock   = errors.New("livelock")
)

// traceDigest keeps a hash of the whole trace and its first lines, so that
// memory stays bounded even when a run goes wrong.
type traceDigest struct {
	h      hash.Hash
	lines  int
	prefix []byte
	last   []byte
	lastT  []byte // the t_ms of the last line
	sameT  int    // lines in a row with that t_ms
}

const keepPrefix = 1 << 20

func newTraceDigest() *traceDigest { return &traceDigest{h: sha256.New()} }

// Write takes one JSON line per call (sim writes each event in one call).
func (d *traceDigest) Write(p []byte) (int, error) {
	d.h.Write(p)
	d.lines += bytes.Count(p, []byte("\n"))
	if n := keepPrefix - len(d.prefix); n > 0 {
		d.prefix = append(d.prefix, p[:min(n, len(p))]...)
	}
	d.last = append(d.last[:0], bytes.TrimSpace(p)...)
	tms, _, _ := bytes.Cut(p, []byte(","))
	if bytes.Equal(tms, d.lastT) {
		d.sameT++
	} else {
		d.lastT = append(d.lastT[:0], tms...)
		d.sameT = 1
	}
	if d.sameT > maxSameInstant {
		panic(errLivelock)
	}
	if d.lines > maxTraceLines {
		panic(errEventStorm)
	}
	return len(p), nil
}

func (d *traceDigest) equal(o *traceDigest) bool {
	return d.lines == o.lines && bytes.Equal(d.h.Sum(nil), o.h.Sum(nil))
}

func firstDiff(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// equal is reflect.DeepEqual with NaN equal to NaN (a YAML .nan is a
// legitimate float; it is the same value on both parses).
func equal(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equal(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !equal(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return false
		}
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !equal(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !equal(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return x == y || (math.IsNaN(x) && math.IsNaN(y))
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprint(a.Complex()) == fmt.Sprint(b.Complex())
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.IsNil() && b.IsNil()
	}
	return a.Equal(b)
}
