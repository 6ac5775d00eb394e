package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRunLibrary: `make run LIBRARY=…` runs `nomarr tag` on LIBRARY
// with --log-level warn, as the demo run does, and expands a leading ~/
// (LIBRARY is quoted for the shell, where ~ would stay literal); a quote in
// the path survives. The Makefile runs in a copy, with a bin/nomarr that
// records its arguments, deps and build taken as done.
func TestMakeRunLibrary(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(dir, "args")
	fake := "#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done > " + args + "\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "nomarr"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for lib, want := range map[string]string{
		"~/My Music/Guns N' Roses": home + "/My Music/Guns N' Roses",
		"~":                        home,
		"/srv/music/~old":          "/srv/music/~old",
	} {
		cmd := exec.Command("make", "-s", "-o", "deps", "-o", "build", "run", "LIBRARY="+lib, "GO=true")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "MAKEFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make run LIBRARY=%s: %v\n%s", lib, err, out)
		}
		got, err := os.ReadFile(args)
		if err != nil {
			t.Fatal(err)
		}
		argv := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
		if len(argv) < 2 || argv[0] != "tag" || argv[1] != want {
			t.Errorf("LIBRARY=%s: bin/nomarr %q, want tag %q …", lib, argv, want)
		}
		if !strings.Contains(string(got), "\n--log-level\nwarn\n") {
			t.Errorf("LIBRARY=%s: no --log-level warn: %q", lib, argv)
		}
	}
}
