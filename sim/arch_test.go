package sim_test

// Determinism across machines (docs/design.md §12: "the same scenario and seed must
// produce a byte-identical trace on every run and every machine"). This
// package's tests are built for other architectures — 386 (32-bit ints and
// pointers, run directly) and arm64 (whose compiler fuses multiply-adds,
// run through qemu-aarch64) — and made to write the traces of every
// scenario file and of the determinism tests' generated cases, which must
// equal this machine's byte for byte.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/sim"
)

// writeTracesEnv, when set to a directory, makes this test binary write the
// traces compared across machines there and exit instead of testing.
const writeTracesEnv = "NOMARR_WRITE_TRACES"

func TestMain(m *testing.M) {
	if dir := os.Getenv(writeTracesEnv); dir != "" {
		if err := writeTraces(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writeTraces writes one JSONL trace per scenario file (NAME.jsonl) and per
// generated determinism case (generated-I.jsonl) into dir.
func writeTraces(dir string) error {
	paths, err := filepath.Glob(filepath.Join("..", "scenarios", "*.yaml"))
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return errors.New("no scenario files under ../scenarios")
	}
	cases := map[string]*genCase{}
	for _, path := range paths {
		sc, err := sim.Load(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		cases[strings.TrimSuffix(filepath.Base(path), ".yaml")] = &genCase{sc: sc}
	}
	for i, c := range determinismCases() {
		cases[fmt.Sprintf("generated-%02d", i)] = c
	}
	for name, c := range cases {
		var buf bytes.Buffer
		runCase(c, sim.Options{Trace: &buf, Check: true}, true)
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// TestDeterminismAcrossArchitectures compares this machine's traces with
// those of this package's tests built for 386 and arm64.
func TestDeterminismAcrossArchitectures(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command in PATH to build the tests for other architectures")
	}
	native := t.TempDir()
	if err := writeTraces(native); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(native, "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no traces written (%v)", err)
	}
	for _, arch := range []struct{ goarch, runner string }{{"386", ""}, {"arm64", "qemu-aarch64"}} {
		t.Run(arch.goarch, func(t *testing.T) {
			var runner []string
			if arch.runner != "" {
				p, err := exec.LookPath(arch.runner)
				if err != nil {
					t.Skipf("needs %s to run %s binaries (Debian package qemu-user, which `make deps` installs)", arch.runner, arch.goarch)
				}
				runner = append(runner, p)
			}
			bin := filepath.Join(t.TempDir(), "sim-"+arch.goarch+".test")
			build := exec.Command(goTool, "test", "-c", "-o", bin, ".")
			build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch.goarch, "CGO_ENABLED=0", "GOFLAGS=")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build for %s: %v\n%s", arch.goarch, err, out)
			}
			dir := t.TempDir()
			run := exec.Command(bin)
			if runner != nil {
				run = exec.Command(runner[0], bin)
			}
			run.Env = append(os.Environ(), writeTracesEnv+"="+dir)
			if out, err := run.CombinedOutput(); err != nil {
				if errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "exec format error") {
					t.Skipf("this machine cannot run %s binaries: %v", arch.goarch, err)
				}
				t.Fatalf("%s traces: %v\n%s", arch.goarch, err, out)
			}
			for _, path := range names {
				name := filepath.Base(path)
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatalf("%s: no trace from %s: %v", name, arch.goarch, err)
				}
				requireSame(t, fmt.Sprintf("%s on %s vs this machine", name, arch.goarch), want, got)
			}
			t.Logf("%d traces identical on %s", len(names), arch.goarch)
		})
	}
}
