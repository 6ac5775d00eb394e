package main

import (
	"fmt"
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

// TestMakeRunDemo: `make run` without LIBRARY tags the demo's good/ and
// prints every nom tag of speech.flac (it used to cut them at 12, top_tags
// among those left out), then tags the demo's bad/ (generated and never
// used before) and lists its failed files; tag's exit 1 for them does not
// fail the demo, any other exit does. It runs in a copy of the Makefile,
// with a bin/nomarr and an ffprobe that record and answer, and a demo
// library that is already there.
func TestMakeRunDemo(t *testing.T) {
	for _, tool := range []string{"make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no " + tool)
		}
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"bin", "tools", ".nomarr/demo/good", ".nomarr/demo/bad"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var tags strings.Builder
	for i := range 40 {
		fmt.Fprintf(&tags, "TAG:NOM_KEY%02d=%d\\n", i, i)
	}
	calls := filepath.Join(dir, "calls")
	for path, body := range map[string]string{
		"Makefile": string(mk),
		// tag of bad/ exits $BADEXIT (1 when its files fail, as nomarr
		// does); every other call exits 0.
		"bin/nomarr":    "#!/bin/sh\necho \"$*\" >> " + calls + "\ncase \"$1 $2\" in \"tag \"*/bad) exit ${BADEXIT:-1} ;; esac\n",
		"tools/ffprobe": "#!/bin/sh\nprintf 'TAG:ENCODER=x\\n" + tags.String() + "'\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runMake := func(badExit string) (string, error) {
		cmd := exec.Command("make", "-s", "-o", "deps", "-o", "build", "run", "GO=true")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "tools")+":"+os.Getenv("PATH"), "MAKEFLAGS=", "BADEXIT="+badExit)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := runMake("1")
	if err != nil {
		t.Fatalf("make run: %v\n%s", err, out)
	}
	for i := range 40 {
		if want := fmt.Sprintf("TAG:NOM_KEY%02d=%d\n", i, i); !strings.Contains(out, want) {
			t.Errorf("make run does not show %q:\n%s", want, out)
		}
	}
	got, _ := os.ReadFile(calls)
	demo := filepath.Join(dir, ".nomarr", "demo")
	for _, want := range []string{"tag " + demo + "/good ", "tag " + demo + "/bad ", "failed " + demo + "/bad "} {
		if !strings.Contains(string(got), want) {
			t.Errorf("make run did not run nomarr %s…; it ran:\n%s", want, got)
		}
	}
	if out, err := runMake("2"); err == nil {
		t.Errorf("make run succeeded while tag of bad/ exited 2:\n%s", out)
	}
}
