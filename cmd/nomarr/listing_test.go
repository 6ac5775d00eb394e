package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/library"
)

// oddNames are file names that a raw listing would print as more lines
// (\n), more fields (\t), a terminal escape (\x1b[31m), bytes that are
// not UTF-8, or a line that reads as quoted; and one ordinary name.
var oddNames = []string{"new\nline.mp3", "tab\there.mp3", "\x1b[31mred.mp3", "bad\xff\xfe.mp3", `"quoted".mp3`, "plain name.mp3"}

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/music/plain name.mp3", "/music/plain name.mp3"},
		{"/music/Sigur Rós – Hoppípolla.flac", "/music/Sigur Rós – Hoppípolla.flac"},
		{"/music/a\u00a0b.mp3", "/music/a\u00a0b.mp3"}, // a no-break space is a space
		{"/music/new\nline.mp3", `"/music/new\nline.mp3"`},
		{"/music/tab\there.mp3", `"/music/tab\there.mp3"`},
		{"/music/\x1b[31mred.mp3", `"/music/\x1b[31mred.mp3"`},
		{"/music/bad\xff.mp3", `"/music/bad\xff.mp3"`},
		{"/music/\u202eevil.mp3", `"/music/\u202eevil.mp3"`}, // right-to-left override
		{`"quoted".mp3`, `"\"quoted\".mp3"`},
		{`/music/"inner".mp3`, `/music/"inner".mp3`},
	} {
		got := printable(c.in)
		if got != c.want {
			t.Errorf("printable(%q) = %s, want %s", c.in, got, c.want)
		}
		if back, err := strconv.Unquote(got); got != c.in && (err != nil || back != c.in) {
			t.Errorf("printable(%q) = %s does not unquote back: %q, %v", c.in, got, back, err)
		}
	}
}

// TestFailedAndMissingListOddNames guards that `nomarr failed` and `nomarr
// missing` print a name holding a newline, a tab, an escape sequence or
// bytes that are not UTF-8 quoted, one file per line, and ordinary names
// as they are; that --json prints one object per file and line with every
// path recoverable (path_base64 for bytes that are not UTF-8); that -0
// prints the raw paths, each followed by a NUL; and that --json with -0 is
// refused.
func TestFailedAndMissingListOddNames(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	paths := audioFiles(t, lib, oddNames...)
	audioFiles(t, lib, "kept.mp3") // tagged, and there: a scan that finds nothing marks nothing missing
	var overrides strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&overrides, "    %s: {error: permanent}\n", library.Key(p))
	}
	failing := write(t, "name: s\nduration: 1m\nlibrary:\n  files: 1\n  job_time: 10ms\n  overrides:\n"+overrides.String())
	nomarr := cli(t, bin, data)
	nomarr(1, "tag", lib, "--workers", "1", "--analyzer", "script:"+failing)
	const reason = "permanent: injected permanent error"

	list := func(wantCode int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append(args, "--data-dir", data), &out, &errb); code != wantCode {
			t.Fatalf("nomarr %q: exit %d, want %d\n%s%s", args, code, wantCode, out.String(), errb.String())
		}
		return out.String()
	}
	check := func(cmd string, line func(p string) string, decode func(l listedFile, p string)) {
		t.Helper()
		out := list(0, cmd)
		var want []string
		for _, p := range paths {
			want = append(want, line(p))
		}
		got := strings.SplitAfter(out, "\n")
		got = got[:len(got)-1]
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("nomarr %s printed\n%q\nwant the lines\n%q", cmd, got, want)
		}
		if !strings.Contains(out, "\t"+reason) == (cmd == "failed") || strings.Contains(out, "\x1b") {
			t.Errorf("nomarr %s: %q", cmd, out)
		}

		out = list(0, cmd, "--json")
		var raw []string
		for l := range strings.Lines(out) {
			var f listedFile
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatalf("nomarr %s --json: line %q: %v", cmd, l, err)
			}
			p := f.Path
			if f.PathBase64 != "" {
				b, err := base64.StdEncoding.DecodeString(f.PathBase64)
				if err != nil {
					t.Fatal(err)
				}
				p = string(b)
			}
			decode(f, p)
			raw = append(raw, p)
		}
		slices.Sort(raw)
		sorted := slices.Sorted(slices.Values(paths))
		if !slices.Equal(raw, sorted) {
			t.Errorf("nomarr %s --json gave the paths %q, want %q", cmd, raw, sorted)
		}

		out = list(0, cmd, "-0")
		if !strings.HasSuffix(out, "\x00") {
			t.Errorf("nomarr %s -0: %q does not end in NUL", cmd, out)
		}
		raw = strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
		slices.Sort(raw)
		if !slices.Equal(raw, sorted) {
			t.Errorf("nomarr %s -0 gave the paths %q, want %q", cmd, raw, sorted)
		}
		list(2, cmd, "--json", "-0")
	}

	check("failed", func(p string) string { return printable(p) + "\t" + reason + "\n" }, func(l listedFile, p string) {
		if l.Error == nil || *l.Error != reason || l.Missing == nil || *l.Missing {
			t.Errorf("failed --json: %s: %+v, want error %q and missing false", p, l, reason)
		}
	})
	if want := printable(filepath.Join(lib, "plain name.mp3")); want != filepath.Join(lib, "plain name.mp3") {
		t.Errorf("an ordinary name is printed as %s", want)
	}

	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	nomarr(0, "scan", lib)
	check("missing", func(p string) string { return printable(p) + "\n" }, func(l listedFile, p string) {
		if l.Error != nil || l.Missing != nil {
			t.Errorf("missing --json: %s: %+v, want the path only", p, l)
		}
	})
}
