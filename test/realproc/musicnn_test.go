package realproc

import (
	"bytes"
	"database/sql"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tagsOf returns the format and stream tags ffprobe reads from a file.
func tagsOf(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format_tags:stream_tags", "-of", "default=nw=1", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "TAG:"), "=")
		if ok {
			m[strings.ToLower(k)] = v
		}
	}
	return m
}

func score(t *testing.T, tags map[string]string, class string) float64 {
	t.Helper()
	for _, k := range []string{"nom:" + class + "_musicnn_voice_instrumental", "nom_" + class + "_musicnn_voice_instrumental"} {
		if v, ok := tags[k]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s = %q", k, v)
			}
			return f
		}
	}
	t.Fatalf("no %s score in %v", class, tags)
	return 0
}

// nomarr tag with the real pipeline on a generated library: every format is
// tagged, ffprobe reads the tags back, speech scores voice > 0.5, a sine
// chord scores instrumental > 0.5, and the tags are in the store too.
func TestTagMusicNNEndToEnd(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	lib, data := t.TempDir(), t.TempDir()
	if out, err := exec.Command(filepath.Join(root, "scripts", "testaudio.sh"), lib).CombinedOutput(); err != nil {
		t.Fatalf("scripts/testaudio.sh (needs `make deps`): %v\n%s", err, out)
	}
	args := []string{"tag", filepath.Join(lib, "good"), "--workers", "2", "--data-dir", data,
		"--models-dir", filepath.Join(root, "..", "shared", "models", "musicnn"),
		"--onnxruntime-lib", filepath.Join(root, ".cache", "onnxruntime", "libonnxruntime.so.1")}
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("nomarr tag: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.HasPrefix(out.String(), "tagged 25, failed 0, pending 0 of 25") {
		t.Fatalf("summary %q", out.String())
	}
	for _, ext := range []string{"mp3", "flac", "ogg", "opus", "m4a"} {
		speech := tagsOf(t, filepath.Join(lib, "good", "speech."+ext))
		chord := tagsOf(t, filepath.Join(lib, "good", "chord."+ext))
		if v := score(t, speech, "voice"); v <= 0.5 {
			t.Errorf("speech.%s: voice %.3f, want > 0.5", ext, v)
		}
		if v := score(t, chord, "instrumental"); v <= 0.5 {
			t.Errorf("chord.%s: instrumental %.3f, want > 0.5", ext, v)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "nomarr.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM file_tags WHERE tags LIKE '%voice_musicnn_voice_instrumental%'`).Scan(&n); err != nil || n != 25 {
		t.Errorf("tags stored for %d files (err %v), want 25", n, err)
	}

	// A fresh store over the files just tagged (a library moved, a store
	// lost): each file already holds this model set's tags, so none goes
	// through the models again (each says so at DEBUG), the files stay
	// byte for byte, and the store gets the same tags.
	tagged := map[string][]byte{}
	good, _ := filepath.Glob(filepath.Join(lib, "good", "*"))
	for _, f := range good {
		tagged[f], _ = os.ReadFile(f)
	}
	fresh := t.TempDir()
	again := slices.Clone(args)
	again[slices.Index(again, data)] = fresh
	cmd = exec.Command(binary, append(again, "--log-level", "debug")...)
	out.Reset()
	errb.Reset()
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || !strings.HasPrefix(out.String(), "tagged 25, failed 0, pending 0 of 25") {
		t.Fatalf("nomarr tag with a fresh store: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if n := strings.Count(errb.String(), "inference skipped"); n != 25 {
		t.Errorf("%d of 25 files already tagged skipped the models", n)
	}
	for f, b := range tagged {
		if now, _ := os.ReadFile(f); !bytes.Equal(now, b) {
			t.Errorf("%s changed when tagged again", f)
		}
	}
	if first, second := storedTags(t, data), storedTags(t, fresh); !maps.Equal(first, second) || len(first) != 25 {
		t.Errorf("tags stored from the files differ from the analysis:\n%v\n%v", first, second)
	}

	// Bad files fail permanently with a reason, untouched, and tag exits 1.
	before := map[string][]byte{}
	bad, _ := filepath.Glob(filepath.Join(lib, "bad", "*"))
	for _, f := range bad {
		before[f], _ = os.ReadFile(f)
	}
	cmd = exec.Command(binary, append([]string{"tag", filepath.Join(lib, "bad")}, args[2:]...)...)
	out.Reset()
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err == nil {
		t.Errorf("tagging bad files exited 0: %s", out.String())
	}
	if !strings.Contains(out.String(), "tagged 0") {
		t.Errorf("bad files summary %q", out.String())
	}
	for f, b := range before {
		if now, _ := os.ReadFile(f); !bytes.Equal(now, b) {
			t.Errorf("%s was modified", f)
		}
	}
}

// storedTags returns each stored file's tags (as stored, JSON) by path.
func storedTags(t *testing.T, data string) map[string]string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "nomarr.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT f.path, t.tags FROM file_tags t JOIN library_files f ON f.key = t.file_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var p, tg string
		if err := rows.Scan(&p, &tg); err != nil {
			t.Fatal(err)
		}
		out[p] = tg
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
