package inventory

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

func TestMissing(t *testing.T) {
	stored := []store.File{
		{Key: "a", Path: "/music/a.mp3", IsValid: true},
		{Key: "b", Path: "/music/sub/b.flac", IsValid: true},
		{Key: "c", Path: "/music/c.mp3", IsValid: true},
		{Key: "d", Path: "/music-other/d.mp3", IsValid: true}, // another root with the same prefix
		{Key: "e", Path: "/music/e.mp3", IsValid: false},      // already missing (or empty)
		{Key: "f", Path: "/elsewhere/f.mp3", IsValid: true},
		{Key: "g", Path: "/music/sub/deep/g.mp3", IsValid: true},
		{Key: "h", Path: "/music/subway/h.mp3", IsValid: true}, // beside sub, not in it
	}
	none := func(string) bool { return false }
	for _, c := range []struct {
		name   string
		root   string
		seen   map[string]bool
		unread []string
		onDisk func(string) bool
		want   []string
	}{
		{"gone under the root", "/music", map[string]bool{"a": true}, nil, none, []string{"b", "c", "g", "h"}},
		{"all seen", "/music", map[string]bool{"a": true, "b": true, "c": true, "g": true, "h": true}, nil, none, nil},
		{"a sub-folder as root", "/music/sub", map[string]bool{"x": true}, nil, none, []string{"b", "g"}},
		{"root with a slash", "/music/", map[string]bool{"a": true, "c": true, "g": true, "h": true}, nil, none, []string{"b"}},
		{"the whole file system", "/", map[string]bool{"a": true}, nil, none, []string{"b", "c", "d", "f", "g", "h"}},
		{"a scan that found nothing marks nothing", "/music", map[string]bool{}, nil, none, nil},
		// lost+found, say: before, one unreadable folder kept every file of
		// the library from being marked, on every scan.
		{"an unreadable folder keeps only its own files", "/music", map[string]bool{"a": true}, []string{"/music/sub"}, none, []string{"c", "h"}},
		{"an unreadable file keeps only itself", "/music", map[string]bool{"a": true}, []string{"/music/c.mp3"}, none, []string{"b", "g", "h"}},
		{"an unreadable folder under the whole file system", "/", map[string]bool{"a": true}, []string{"/music"}, none, []string{"d", "f"}},
		// Stored by another process during the walk, after the walk passed
		// its folder: on disk, so not marked.
		{"a file on disk is not marked", "/music", map[string]bool{"a": true}, nil,
			func(p string) bool { return p == "/music/c.mp3" }, []string{"b", "g", "h"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			unread := map[string]bool{}
			for _, p := range c.unread {
				unread[p] = true
			}
			var asked []string
			onDisk := func(p string) bool {
				asked = append(asked, p)
				return c.onDisk(p)
			}
			s := Scan{Root: c.root, Seen: c.seen, Unread: unread}
			if got := s.Missing(stored, onDisk); !slices.Equal(got, c.want) {
				t.Errorf("Missing(%q) = %v, want %v", c.root, got, c.want)
			}
			if len(asked) > len(c.want)+1 {
				t.Errorf("onDisk asked of %v: only the candidates' paths are looked at", asked)
			}
		})
	}
}

func TestFailed(t *testing.T) {
	stored := []store.File{
		{Key: "a", Path: "/music/a.mp3", Failed: true},
		{Key: "b", Path: "/music/sub/b.flac", Failed: true},
		{Key: "c", Path: "/music/c.mp3"},                     // not failed
		{Key: "d", Path: "/music-other/d.mp3", Failed: true}, // another root with the same prefix
	}
	keys := func(fs []store.File) (out []string) {
		for _, f := range fs {
			out = append(out, f.Key)
		}
		return out
	}
	for root, want := range map[string][]string{
		"/music":     {"a", "b"},
		"/music/":    {"a", "b"},
		"/music/sub": {"b"},
		"/":          {"a", "b", "d"},
		"":           {"a", "b", "d"},
		"/nothing":   nil,
	} {
		if got := keys(Failed(stored, root)); !slices.Equal(got, want) {
			t.Errorf("Failed(%q) = %v, want %v", root, got, want)
		}
	}
}

// Gone: not valid, under the root and not on disk; a valid file, or one
// on disk (an empty file, or one back since the last scan), is not.
func TestGone(t *testing.T) {
	stored := []store.File{
		{Key: "a", Path: "/music/a.mp3"},                         // missing
		{Key: "b", Path: "/music/sub/b.flac"},                    // missing
		{Key: "c", Path: "/music/c.mp3", IsValid: true},          // valid
		{Key: "d", Path: "/music/empty.mp3"},                     // empty: on disk
		{Key: "e", Path: "/music/back.mp3"},                      // back since the scan
		{Key: "f", Path: "/music-other/f.mp3"},                   // another root with the same prefix
		{Key: "g", Path: "/music/gone-valid.mp3", IsValid: true}, // valid though absent: a scan decides
	}
	present := map[string]bool{"/music/c.mp3": true, "/music/empty.mp3": true, "/music/back.mp3": true}
	onDisk := func(p string) bool { return present[p] }
	for root, want := range map[string][]string{
		"/music":     {"a", "b"},
		"/music/sub": {"b"},
		"":           {"a", "b", "f"},
		"/nothing":   nil,
	} {
		var got []string
		for _, f := range Gone(stored, root, onDisk) {
			got = append(got, f.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Gone(%q) = %v, want %v", root, got, want)
		}
	}
}

func TestScanRetry(t *testing.T) {
	for _, c := range []struct {
		failures int
		rescan   time.Duration
		want     time.Duration
	}{
		{1, time.Hour, 5 * time.Second},
		{2, time.Hour, 10 * time.Second},
		{4, time.Hour, 40 * time.Second},
		{7, time.Hour, 5 * time.Minute},
		{50, time.Hour, 5 * time.Minute},
		{3, 0, 20 * time.Second}, // no periodic rescan: retried all the same
		{7, 0, 5 * time.Minute},
		{5, 30 * time.Second, 30 * time.Second}, // never later than the next rescan
	} {
		if got := ScanRetry(c.failures, c.rescan); got != c.want {
			t.Errorf("ScanRetry(%d, %s) = %s, want %s", c.failures, c.rescan, got, c.want)
		}
	}
}

// Stale: found by the scan, tagged, valid, not failed, by another model
// set; an unknown (empty) current version sends nothing back to work.
func TestStale(t *testing.T) {
	stored := []store.File{
		{Key: "a", Tagged: true, IsValid: true, TaggedVersion: "v1"},                             // another model set
		{Key: "b", Tagged: true, IsValid: true, TaggedVersion: "v2"},                             // the current one
		{Key: "c", Tagged: true, IsValid: true, TaggedVersion: "v1", Failed: true},               // failed: an operator's call
		{Key: "d", IsValid: true, NeedsTagging: true},                                            // pending
		{Key: "e", IsValid: true, NeedsTagging: true, TaggedVersion: "v1"},                       // pending again (changed on disk)
		{Key: "f", Tagged: true, TaggedVersion: "v1"},                                            // missing: waits until found again
		{Key: "g", Tagged: true, IsValid: true},                                                  // tagged without a version
		{Key: "h", Tagged: true, IsValid: true, NeedsTagging: true, TaggedVersion: "noop"},       // tagged (and pending)
		{Key: "i", Tagged: true, IsValid: true, TaggedVersion: "V2"},                             // versions compare exactly
		{Key: "j", Failed: true, IsValid: true, NeedsTagging: true, TaggedVersion: "v1"},         // failed, not tagged
		{Key: "k", Tagged: true, IsValid: true, TaggedVersion: "v2", Checkpoint: `{"step":"x"}`}, // current, with a checkpoint
	}
	for i := range stored {
		stored[i].Path = "/music/" + stored[i].Key + ".flac"
	}
	scan := Scan{Root: "/music", Seen: map[string]bool{}}
	for _, f := range stored {
		scan.Seen[f.Key] = true
	}
	// Outside the scanned folder (another scan's business), and inside it
	// but not found by the walk (under a folder it could not read).
	stored = append(stored,
		store.File{Key: "z", Path: "/musical/z.flac", Tagged: true, IsValid: true, TaggedVersion: "v1"},
		store.File{Key: "y", Path: "/music/locked/y.flac", Tagged: true, IsValid: true, TaggedVersion: "v1"})
	for _, c := range []struct {
		version string
		want    []string
	}{
		{"v2", []string{"a", "g", "h", "i"}},
		{"v1", []string{"b", "g", "h", "i", "k"}},
		{"noop", []string{"a", "b", "g", "i", "k"}},
		{"", nil}, // unknown: nothing, never the whole library
	} {
		if got := scan.Stale(stored, c.version); !slices.Equal(got, c.want) {
			t.Errorf("Stale(%q) = %v, want %v", c.version, got, c.want)
		}
	}
	scan.Seen["z"] = true
	if got := scan.Stale(stored, "v2"); !slices.Contains(got, "z") || slices.Contains(got, "y") {
		t.Errorf("Stale with z seen = %v, want z among them, not y", got)
	}
	if got := scan.Stale(nil, "v2"); got != nil {
		t.Errorf("Stale(nil) = %v", got)
	}
	current := []store.File{stored[1], stored[3], stored[10]}
	if n := testing.AllocsPerRun(100, func() { scan.Stale(current, "v2") }); n != 0 {
		t.Errorf("Stale allocates %v times when nothing is stale", n)
	}
}

// BenchmarkStale: inventory.Stale over a 100,000-file library, all tagged
// by the current model set (nothing stale: what every rescan pays) or by
// another one (everything stale).
func BenchmarkStale(b *testing.B) {
	files := make([]store.File, 100_000)
	scan := Scan{Root: "/music", Seen: make(map[string]bool, len(files))}
	for i := range files {
		files[i] = store.File{Key: fmt.Sprintf("%016x", i), Path: fmt.Sprintf("/music/%07d.flac", i),
			IsValid: true, Tagged: true, TaggedVersion: "0123456789ab"}
		scan.Seen[files[i].Key] = true
	}
	for _, c := range []struct{ name, version string }{{"none", "0123456789ab"}, {"all", "ba9876543210"}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for page := range slices.Chunk(files, 5000) {
					scan.Stale(page, c.version)
				}
			}
		})
	}
}
