package sim_test

// Determinism (docs/design.md §12): the same scenario and seed give a
// byte-identical JSONL trace, whether or not the safety checker runs and
// whether or not the trace is kept in memory; a generated scenario written
// out as YAML replays to the same trace; and the seed matters.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/sim"
)

// traceOf runs sc with seed (0: the scenario's own) and returns its JSONL
// trace. A run whose simulated time freezes (a livelock) is cut by a
// stuckGuard; its trace up to there is returned, with stuck set.
func traceOf(t *testing.T, sc *sim.Scenario, seed uint64, opt sim.Options) (trace []byte, stuck bool) {
	t.Helper()
	var buf bytes.Buffer
	opt.Trace = &buf
	o := runCase(&genCase{sc: sc, seed: seed}, opt, true)
	return buf.Bytes(), o.res == nil
}

// firstDiff describes where two traces differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < min(len(la), len(lb)); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\n  run 1: %s\n  run 2: %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("one trace is a prefix of the other: %d vs %d lines", len(la), len(lb))
}

func requireSame(t *testing.T, what string, a, b []byte) {
	t.Helper()
	if !bytes.Equal(a, b) {
		t.Fatalf("%s: traces differ (%d vs %d bytes) at %s", what, len(a), len(b), firstDiff(a, b))
	}
}

// TestDeterminismScenarioFiles runs every scenario file twice with its own
// seed and requires byte-identical traces.
func TestDeterminismScenarioFiles(t *testing.T) {
	var paths []string
	for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(filepath.Join("..", "scenarios", pat))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Skip("no scenario files under ../scenarios")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := sim.Load(path)
			if err != nil {
				t.Skipf("not a loadable scenario (the scenarios suite reports it): %v", err)
			}
			a, _ := traceOf(t, sc, 0, sim.Options{Check: true})
			b, _ := traceOf(t, sc, 0, sim.Options{Check: true})
			if len(a) == 0 {
				t.Fatalf("empty trace")
			}
			requireSame(t, path, a, b)
		})
	}
}

// determinismCases are the generated cases the determinism tests use: the
// first 20 examples of the property generator (both modes).
func determinismCases() []*genCase {
	cases := make([]*genCase, 20)
	for i := range cases {
		cases[i] = genScenario().Example(i)
	}
	return cases
}

// TestDeterminismGenerated runs 20 generated scenarios twice with the same
// seed (once with the checker and the in-memory trace, once without) and
// requires byte-identical traces; and replays each from its YAML form.
func TestDeterminismGenerated(t *testing.T) {
	for i, c := range determinismCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			a, stuckA := traceOf(t, c.sc, c.seed, sim.Options{Check: true})
			b, stuckB := traceOf(t, c.sc, c.seed, sim.Options{NoRetain: true})
			if stuckA != stuckB {
				t.Fatalf("one run froze and the other did not (the checker or trace retention changes the run)")
			}
			requireSame(t, "same seed, checker on vs off", a, b)
			// The YAML reproducer that failing properties print replays
			// to the same trace.
			sc, err := sim.Parse([]byte(scenarioYAML(c.sc)))
			if err != nil {
				t.Fatalf("generated scenario does not parse back: %v\n%s", err, scenarioYAML(c.sc))
			}
			y, _ := traceOf(t, sc, c.seed, sim.Options{NoRetain: true})
			requireSame(t, "Go-built vs YAML scenario", a, y)
		})
	}
}

// TestDeterminismSeedMatters requires that a different seed gives a
// different trace for at least one generated case with faults. The seed
// drives the store's random errors (error_rate faults) and how frames are
// split across pipe reads (which never shows in the trace), so the cases
// tried are the first generated ones with an error_rate fault.
func TestDeterminismSeedMatters(t *testing.T) {
	tried := 0
	for i := 0; tried < 5 && i < 500; i++ {
		c := genScenario().Example(i)
		if c.sc.Library.Files == 0 || !hasFault(c, func(f *sim.Fault) bool { return f.ErrorRate > 0 }) {
			continue
		}
		tried++
		a, _ := traceOf(t, c.sc, c.seed, sim.Options{NoRetain: true})
		b, _ := traceOf(t, c.sc, c.seed+1, sim.Options{NoRetain: true})
		if !bytes.Equal(a, b) {
			return
		}
	}
	if tried == 0 {
		t.Fatal("the generator produced no case with an error_rate fault in 500 examples")
	}
	t.Fatalf("%d generated cases with error_rate faults gave the same trace for seeds s and s+1", tried)
}
