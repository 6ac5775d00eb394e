package tagwrite

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/tags"
)

// The tests read what Write wrote with readers that share no code with
// TagLib: ffprobe (ffmpeg) and mutagen (testdata/readtags.py). mutagen is
// a test dependency (python3-mutagen, scripts/deps.sh --test): without it
// the tests fail rather than skip.

// mutagenPython is the Python that has mutagen: Debian's, else the first
// on PATH.
func mutagenPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// mutagenTags is the file's text tags as mutagen reads them (readtags.py).
func mutagenTags(t *testing.T, path string) map[string][]string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(mutagenPython(), filepath.Join("testdata", "readtags.py"), path)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mutagen (python3-mutagen; scripts/deps.sh --test installs it): %v\n%s", err, errb.String())
	}
	m := map[string][]string{}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("readtags.py: %v: %s", err, out.String())
	}
	return m
}

// mutagenName is the name mutagen shows for our key in a file of format f.
func mutagenName(f Format, key string) string {
	switch f {
	case MP3, WAV, AIFF:
		return "TXXX:" + FileName(f, key)
	}
	return FileName(f, key)
}

// mutagenStdName is the name mutagen shows for a standard field.
func mutagenStdName(f Format, field string) string { return stdName(f, field) }

// mutagenOurs is our tags among m, by key, as Read would give them:
// several values joined by "; ".
func mutagenOurs(f Format, m map[string][]string) map[string]string {
	out := map[string]string{}
	for name, vals := range m {
		if mutagenIsOurs(f, name) {
			out[keyOf(f, strings.TrimPrefix(name, "TXXX:"))] = strings.Join(vals, "; ")
		}
	}
	return out
}

func mutagenIsOurs(f Format, name string) bool {
	if f == MP4 {
		return strings.HasPrefix(name, mp4Prefix)
	}
	return isOurs(f, strings.TrimPrefix(name, "TXXX:"))
}

// mutagenOthers is the tags of m that are not ours, each name's values
// sorted (TagLib does not keep the order of a WMA attribute's values).
func mutagenOthers(f Format, m map[string][]string) map[string]string {
	out := map[string]string{}
	for name, vals := range m {
		if !mutagenIsOurs(f, name) {
			out[name] = strings.Join(slices.Sorted(slices.Values(vals)), "\x00")
		}
	}
	return out
}

// probeStd is the value ffprobe shows for a standard field (ffmpeg's own
// names differ by format: "genre", "TMOO", "MOOD", "WM/Mood", "mood"),
// and whether it shows one.
func probeStd(p probed, f Format, field string) (string, bool) {
	names := []string{field, stdName(f, field)}
	if f == MP4 && field == tags.FieldMood {
		names = append(names, "MOOD") // ffmpeg's name of the free-form atom
	}
	for k, v := range p.others {
		_, k, _ = strings.Cut(k, ":") // "format:", "stream0:"
		for _, n := range names {
			if strings.EqualFold(k, n) {
				return v, true
			}
		}
	}
	return "", false
}
