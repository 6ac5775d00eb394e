package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDepsInstallsACompiler: scripts/deps.sh installs a C compiler (gcc,
// with the C library's headers) when none is on PATH, as it installs the
// other packages: without one Go builds without cgo, and that binary
// cannot run the MusiCNN analyzer. With a cc on PATH it installs none. It
// runs with fake dpkg-query, apt-get and id on a PATH of their own.
func TestDepsInstallsACompiler(t *testing.T) {
	for _, tool := range []string{"bash", "env", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no " + tool)
		}
	}
	script, err := filepath.Abs("../../scripts/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, withCC := range []bool{false, true} {
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
		installed := filepath.Join(dir, "installed")
		fakes := map[string]string{
			"id": "#!/bin/sh\necho 0\n",
			"dpkg-query": "#!/bin/sh\nfor a; do p=$a; done\nread -r list < " + installed + "\n" +
				"case \" $list \" in *\" $p \"*) printf 'install ok installed' ;; *) exit 1 ;; esac\n",
			"apt-get": "#!/bin/sh\necho \"$*\" >> " + filepath.Join(dir, "apt.log") + "\n" +
				"if [ \"$1\" = install ]; then shift; for a; do case $a in -*) ;; *) list=\"$list $a\" ;; esac; done\n" +
				"read -r old < " + installed + "; echo \"$old$list\" > " + installed + "; fi\n",
		}
		if withCC {
			fakes["cc"] = "#!/bin/sh\nexit 0\n"
		}
		for name, body := range fakes {
			if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(installed, []byte("ffmpeg libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libtag1-dev pkg-config sox espeak-ng\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(script)
		cmd.Env = []string{"PATH=" + bin}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("deps.sh (cc on PATH: %v): %v\n%s", withCC, err, out)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "apt.log"))
		switch {
		case !withCC && !strings.Contains(string(log), "install -y --no-install-recommends gcc libc6-dev"):
			t.Errorf("no C compiler on PATH: deps.sh did not install gcc and libc6-dev; apt-get calls:\n%s\noutput:\n%s", log, out)
		case withCC && len(log) > 0:
			t.Errorf("a cc on PATH: deps.sh still ran apt-get:\n%s\noutput:\n%s", log, out)
		}
	}
}
