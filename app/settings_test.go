package app

import (
	"flag"
	"io"
	"testing"
)

// testSettings resolves the settings a command line of flags gives, as a
// command does (DefineFlags, then Resolve), without NOMARR_* warnings.
func testSettings(t *testing.T, args ...string) *Settings {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	src := DefineFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := src.Resolve(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
