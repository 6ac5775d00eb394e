package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/app"
)

// TestMusicNNRefusedWithoutCgo: a binary built without cgo (no C compiler
// at build time) cannot run the MusiCNN analyzer. `tag` and `serve` say so
// at start, with how to fix it, and exit 2 before they create, scan or
// spawn anything; their workers used to crash-loop until failed, and the
// failure, persisted, outlived the rebuild. The noop and script analyzers
// need no cgo.
func TestMusicNNRefusedWithoutCgo(t *testing.T) {
	defer func(v bool) { app.HaveCgo = v }(app.HaveCgo)
	app.HaveCgo = false
	lib := t.TempDir()
	audioFiles(t, lib, "a.mp3")
	data := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"tag", lib},
		{"tag", lib, "--analyzer", "musicnn"},
		{"serve", "--library-root", lib, "--http-addr", "127.0.0.1:0"},
	} {
		var out, errb bytes.Buffer
		rc := run(append(args, "--data-dir", data), &out, &errb)
		msg := errb.String()
		if rc != exitUsage || !strings.HasPrefix(msg, "nomarr "+args[0]+": ") || strings.Count(msg, "\n") != 1 ||
			!strings.Contains(msg, "built without cgo") || !strings.Contains(msg, "install a C compiler") ||
			!strings.Contains(msg, "CGO_ENABLED=1 (`make build`)") {
			t.Errorf("%v in a build without cgo: exit %d, %q; want 2 and one line saying how to fix it", args, rc, msg)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%v created %s (%v)", args, data, err)
		}
	}
	for _, analyzer := range []string{"noop", "script:x.yaml"} {
		s, err := loadWithFile(t, "", "--analyzer", analyzer, "--data-dir", data)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.CheckAnalyzer(s); err != nil {
			t.Errorf("analyzer %s refused without cgo: %v", analyzer, err)
		}
	}
}
