package core_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// simImporters returns, for each non-test Go file under the given top-level
// folders of root, the imports of the simulator (module/sim and below) it
// makes, as "file: path" lines. Files under testdata are not code.
func simImporters(root string, folders []string) (offences []string, files int, err error) {
	fset := token.NewFileSet()
	for _, folder := range folders {
		dir := filepath.Join(root, folder)
		if _, serr := os.Stat(dir); os.IsNotExist(serr) {
			continue
		}
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			files++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p == module+"/sim" || strings.HasPrefix(p, module+"/sim/") {
					rel, _ := filepath.Rel(root, path)
					offences = append(offences, fmt.Sprintf("%s: %s", rel, p))
				}
			}
			return nil
		})
		if err != nil {
			return nil, files, err
		}
	}
	return offences, files, nil
}

// TestProductionLayersNeverImportTheSimulator holds the layering of
// docs/design.md §1: the simulator drives production code, never the other
// way round. No non-test file of the adapters, the driver, the
// configuration or the application layer imports sim/ or a package under
// it; only the sim and drill commands, scenarios, fuzz targets and tests do.
func TestProductionLayersNeverImportTheSimulator(t *testing.T) {
	offences, files, err := simImporters("..", []string{"adapters", "driver", "config", "app", "internal"})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("checked only %d files: is the test running in core/?", files)
	}
	if len(offences) > 0 {
		t.Fatalf("production code imports the simulator:\n  %s", strings.Join(offences, "\n  "))
	}
}

// TestSimImportersFindsAnImport proves the rule fires: a production file
// that imports sim/scripted is named.
func TestSimImportersFindsAnImport(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("adapters/x/x.go", "package x\nimport _ \""+module+"/sim/scripted\"\n")
	write("adapters/x/x_test.go", "package x\nimport _ \""+module+"/sim\"\n")
	write("driver/d.go", "package d\nimport _ \""+module+"/simulation\"\n")
	write("adapters/x/testdata/t.go", "package t\nimport _ \""+module+"/sim\"\n")
	offences, files, err := simImporters(root, []string{"adapters", "driver", "app"})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join("adapters", "x", "x.go") + ": " + module + "/sim/scripted"
	if files != 2 || len(offences) != 1 || offences[0] != want {
		t.Fatalf("files %d, offences %q; want 2 files and [%q]", files, offences, want)
	}
}
