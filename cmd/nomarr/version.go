package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version, when set at build time (-ldflags "-X main.version=…"), is the
// build's version; otherwise buildVersion reads the commit Go stamped into
// the binary.
var version = ""

// buildVersion is this binary's version, as `nomarr version` prints it and
// the API reports it (/api/v1/info's version, nomarr_build_info): version
// when set at build time, else the build's VCS stamp (versionOf), else
// "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi)
}

// versionOf is the version a build's information gives: the first 12
// digits of its commit (vcs.revision), with "+dirty" when the tree it was
// built from had changes (vcs.modified); "dev" without a commit (go run,
// go test, a build outside a checkout or with -buildvcs=false).
func versionOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return "dev"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// versionHelp is the text of `nomarr version --help` and `nomarr help
// version`.
const versionHelp = "usage: nomarr version\n\n" +
	"Prints the build's version: its commit (+dirty when built from a changed tree),\n" +
	"or dev. /api/v1/info's version and the nomarr_build_info metric report the same.\n"

// runVersion implements `nomarr version` and `nomarr --version`.
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, versionHelp)
		return 0
	}
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: nomarr version")
		return exitUsage
	}
	fmt.Fprintln(stdout, "nomarr", buildVersion())
	return 0
}
