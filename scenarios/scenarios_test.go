// Package scenarios runs every scenario file in this directory through the
// simulator, with the safety invariants on, and checks its expectations.
package scenarios

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/sim"
)

func files(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

func TestScenarios(t *testing.T) {
	paths := files(t)
	if len(paths) < 24 {
		t.Errorf("want at least 24 scenario files, found %d", len(paths))
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(path, filepath.Ext(path)), func(t *testing.T) {
			t.Parallel()
			sc, err := sim.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Expect == nil {
				t.Fatalf("%s has no expect: block", path)
			}
			res, err := sim.Run(sc, sim.Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Failures) > 0 {
				var b strings.Builder
				res.WriteSummary(&b)
				t.Errorf("%s:\n%s", path, b.String())
			}
		})
	}
}
