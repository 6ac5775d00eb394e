package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDeps runs scripts/deps.sh with args on a PATH of its own holding
// bash, env and grep, fake dpkg-query, apt-get and id (root), and the fake
// tools of extra (name: script); installed lists the packages dpkg-query
// reports installed, apt-get adds to them. It returns the apt-get calls
// and the output.
func fakeDeps(t *testing.T, installed string, extra map[string]string, args ...string) (aptLog, out string) {
	t.Helper()
	for _, tool := range []string{"bash", "env", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no " + tool)
		}
	}
	script, err := filepath.Abs("../../scripts/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "env", "grep"} {
		p, _ := exec.LookPath(tool)
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	list := filepath.Join(dir, "installed")
	fakes := map[string]string{
		"id": "#!/bin/sh\necho 0\n",
		"dpkg-query": "#!/bin/sh\nfor a; do p=$a; done\nread -r list < " + list + "\n" +
			"case \" $list \" in *\" $p \"*) printf 'install ok installed' ;; *) exit 1 ;; esac\n",
		"apt-get": "#!/bin/sh\necho \"$*\" >> " + filepath.Join(dir, "apt.log") + "\n" +
			"if [ \"$1\" = install ]; then shift; for a; do case $a in -*) ;; *) list=\"$list $a\" ;; esac; done\n" +
			"read -r old < " + list + "; echo \"$old$list\" > " + list + "; fi\n",
	}
	for name, body := range extra {
		fakes[name] = body
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(list, []byte(installed+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, args...)
	cmd.Env = []string{"PATH=" + bin}
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deps.sh %v: %v\n%s", args, err, o)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "apt.log"))
	return string(log), string(o)
}

// basePackages are the packages deps.sh installs without --test.
const basePackages = "ffmpeg libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libtag1-dev pkg-config sox espeak-ng"

// TestDepsInstallsACompiler: scripts/deps.sh installs a C compiler (gcc,
// with the C library's headers) when none is on PATH, as it installs the
// other packages: without one Go builds without cgo, and that binary
// cannot run the MusiCNN analyzer. With a cc on PATH it installs none.
func TestDepsInstallsACompiler(t *testing.T) {
	for _, withCC := range []bool{false, true} {
		extra := map[string]string{}
		if withCC {
			extra["cc"] = "#!/bin/sh\nexit 0\n"
		}
		log, out := fakeDeps(t, basePackages, extra)
		switch {
		case !withCC && !strings.Contains(log, "install -y --no-install-recommends gcc libc6-dev"):
			t.Errorf("no C compiler on PATH: deps.sh did not install gcc and libc6-dev; apt-get calls:\n%s\noutput:\n%s", log, out)
		case withCC && len(log) > 0:
			t.Errorf("a cc on PATH: deps.sh still ran apt-get:\n%s\noutput:\n%s", log, out)
		}
	}
}

// TestDepsTestInstallsAJavaForJmac: deps.sh --test installs jmac
// (libjmac-java), which encodes the tests' Monkey's Audio files, and a
// Java runtime to run it only when no java is on PATH.
func TestDepsTestInstallsAJavaForJmac(t *testing.T) {
	tested := basePackages + " python3-mutagen chromium qemu-user"
	for _, withJava := range []bool{false, true} {
		extra := map[string]string{"cc": "#!/bin/sh\nexit 0\n"}
		if withJava {
			extra["java"] = "#!/bin/sh\nexit 0\n"
		}
		log, out := fakeDeps(t, tested, extra, "--test")
		want := "install -y --no-install-recommends libjmac-java"
		if !withJava {
			want += " default-jre-headless"
		}
		if !strings.Contains(log, want+"\n") {
			t.Errorf("java on PATH: %v: want %q; apt-get calls:\n%s\noutput:\n%s", withJava, want, log, out)
		}
	}
}
