package main

import (
	"bytes"
	"encoding/json"
	"github.com/nomarr/nomarr/internal/eventually"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestVersionOf: a build's version is its commit's first 12 digits, with
// +dirty when its tree had changes, and dev without a commit.
func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "dev"},
		{&debug.BuildInfo{}, "dev"},
		{&debug.BuildInfo{Settings: rev}, "0123456789ab"},
		{&debug.BuildInfo{Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"})}, "0123456789ab"},
		{&debug.BuildInfo{Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "0123456789ab+dirty"},
	} {
		if got := versionOf(c.bi); got != c.want {
			t.Errorf("%+v: %q, want %q", c.bi, got, c.want)
		}
	}
}

// TestVersionHelp: `nomarr --help` lists version and help as commands, so
// `nomarr help version`, `nomarr version --help` and `nomarr help help`
// describe them (they used to say
// "unknown command" and take --help for an argument, exit 2).
func TestVersionHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "version"}, {"version", "--help"}, {"version", "-h"}} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 0 || out.String() != versionHelp || errb.Len() != 0 {
			t.Errorf("%v: exit %d, %q %q", args, rc, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"help", "help"}, &out, &errb); rc != 0 || out.String() != usage {
		t.Errorf("help help: exit %d, %q %q", rc, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := run([]string{"version", "extra"}, &out, &errb); rc != exitUsage || errb.String() != "usage: nomarr version\n" {
		t.Errorf("version extra: exit %d, %q", rc, errb.String())
	}
}

// TestVersion: `nomarr version` and `nomarr --version` print the build's
// version, and a serve of the same binary reports the same one in
// /api/v1/info (it used to say "dev" whatever the build).
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 0 || out.String() != "nomarr "+buildVersion()+"\n" {
			t.Errorf("%v: exit %d, %q %q", args, rc, out.String(), errb.String())
		}
	}
	bin := nomarrBinary(t)
	got, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(got)), "nomarr ")
	// dev when the build stamps no commit (GOFLAGS=-buildvcs=false).
	if git, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil && v != "dev" &&
		!strings.HasPrefix(string(git), strings.TrimSuffix(v, "+dirty")) {
		t.Errorf("bin --version %q, not the checkout's commit %s", got, git)
	}
	addr := freeAddr(t)
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", t.TempDir(), "--http-addr", addr)
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
	}()
	var info httpapi.Info
	logOnFailure(t, &logs)
	eventually.True(t, 15*time.Second, "/api/v1/info from serve", func() bool {
		resp, err := http.Get("http://" + addr + "/api/v1/info")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&info) == nil
	})
	if info.Version != v {
		t.Errorf("the API's version %q, `nomarr --version` %q", info.Version, v)
	}
}
