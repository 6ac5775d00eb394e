// Package rapidflags sets the flags of the property-test library
// (pgregory.net/rapid) for one test: how many cases, how many steps, and a
// fixed seed, so that CI runs are reproducible, unless the user chose them
// on the command line or through rapid's RAPID_* environment variables.
package rapidflags

import (
	"flag"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Seed is the default base seed of the project's property tests.
const Seed uint64 = 0x6e6f6d617272

// chosen records, before any is set here, the rapid flags the user gave.
var chosen = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
})

// Set sets rapid.checks to checks (or NOMARR_PROPERTY_CHECKS), rapid.steps
// to steps (0: rapid's default) and rapid.seed to seed for the duration of
// t. t must not be parallel: rapid's flags are package variables, read by
// the subtests that t starts.
func Set(t *testing.T, checks, steps int, seed uint64) {
	t.Helper()
	chosen()
	if v := os.Getenv("NOMARR_PROPERTY_CHECKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("NOMARR_PROPERTY_CHECKS=%q: want a positive integer", v)
		}
		checks = n
	}
	set := func(name, env, value string) {
		f := flag.Lookup(name)
		if _, ok := os.LookupEnv(env); ok || f == nil || chosen()[name] {
			return
		}
		old := f.Value.String()
		if err := flag.Set(name, value); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = flag.Set(name, old) })
	}
	set("rapid.checks", "RAPID_CHECKS", strconv.Itoa(checks))
	if steps > 0 {
		set("rapid.steps", "RAPID_STEPS", strconv.Itoa(steps))
	}
	set("rapid.seed", "RAPID_SEED", strconv.FormatUint(seed, 10))
}
