package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// `nomarr calibrate` without a store, or with one that holds too few
// tagged files, exits 1 saying why and stores nothing; an argument is a
// usage error.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db := "sqlite:" + filepath.Join(dir, "nomarr.db")
	var out, errb bytes.Buffer
	if code := run([]string{"calibrate", "--db", db}, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "nomarr calibrate: ") {
		t.Errorf("no store: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"scan", "--db", db, dir}, &out, &errb); code != 0 {
		t.Fatalf("scan: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"calibrate", "--db", db}, &out, &errb); code != 1 || out.Len() != 0 ||
		!strings.HasPrefix(errb.String(), "nomarr calibrate: ") {
		t.Errorf("an empty store: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	t.Logf("%s", errb.String())
	if code := run([]string{"calibrate", "extra"}, &out, &errb); code != exitUsage {
		t.Errorf("an argument: exit %d", code)
	}
}
