package core_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProductionLayersNeverImportTheSimulator holds the layering of
// docs/design.md §1: the simulator drives production code, never the other
// way round. No non-test file of the adapters, the driver, the
// configuration, internal/ or the application layer imports sim/ or a
// package under it; only the sim and drill commands, scenarios, fuzz
// targets and tests do. (app/ is held to more: TestAppNeverImportsSim
// counts its tests too.)
func TestProductionLayersNeverImportTheSimulator(t *testing.T) {
	total := 0
	var offences []string
	for _, folder := range []string{"adapters", "driver", "config", "app", "internal"} {
		dir := filepath.Join("..", folder)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%s: %v: is the test running in core/?", folder, err)
		}
		files, found := layerOffences(t, dir, false, simImports)
		total += files
		offences = append(offences, found...)
	}
	if total < 50 {
		t.Fatalf("checked only %d files: is the test running in core/?", total)
	}
	if len(offences) > 0 {
		t.Fatalf("production code imports the simulator:\n  %s", strings.Join(offences, "\n  "))
	}
}
