package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nomarr/nomarr/adapters/inference"
)

func NewLogger(s *Settings, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(s.Get("log_level")))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// HaveCgo is builtWithCgo (cgo.go, nocgo.go); a variable for the tests.
var HaveCgo = builtWithCgo

// errNoCgoBuild is CheckAnalyzer's answer for the MusiCNN analyzer in a
// binary built without cgo. Its workers would fail every model load
// (inference.ErrNoCgo) and crash-loop until failed, and that failure persists
// past the rebuild that fixes the cause, so the check comes before anything
// is spawned or written.
var errNoCgoBuild = errors.New("this nomarr binary was built without cgo (CGO_ENABLED=0, as Go builds when it finds " +
	"no C compiler), and the musicnn analyzer needs cgo for ONNX Runtime and TagLib: install a C compiler " +
	"(Debian: apt-get install gcc, or `make deps`), then rebuild with CGO_ENABLED=1 (`make build`)")

// CheckAnalyzer says whether the configured analyzer can run, with one clear
// message on how to fix what is missing.
func CheckAnalyzer(s *Settings) error {
	name := s.Get("analyzer")
	switch {
	case name == "noop", strings.HasPrefix(name, "script:"):
		return nil
	case name == "musicnn":
		if !HaveCgo {
			return errNoCgoBuild
		}
		if err := inference.CheckLibrary(s.Get("onnxruntime_lib")); err != nil {
			if looked := s.searched["onnxruntime_lib"]; len(looked) > 1 && errors.Is(err, inference.ErrLibraryNotFound) {
				return inference.LibraryNotFoundIn(looked)
			}
			return err
		}
		for _, f := range inference.ModelFiles() {
			if _, err := os.Stat(filepath.Join(s.Get("models_dir"), f)); err != nil {
				if looked := s.searched["models_dir"]; len(looked) > 1 {
					return fmt.Errorf("model %s not found: looked in %s; put the shared folder (with models/musicnn) "+
						"beside the checkout, or set models_dir (NOMARR_MODELS_DIR) to the folder holding the MusiCNN ONNX models",
						f, strings.Join(looked, ", "))
				}
				return fmt.Errorf("model %s not found in %s: set models_dir (NOMARR_MODELS_DIR) to the folder "+
					"holding the MusiCNN ONNX models", f, s.Get("models_dir"))
			}
		}
		// Every model file is loaded once here, before any worker is
		// spawned: a file cut short or damaged would otherwise fail every
		// worker's load, again after each backoff and restart, while the
		// run sits at 0 done. It takes 130-370 ms on a busy 2-core host
		// (TestTagRefusesADamagedModel checks the refusal).
		if err := inference.CheckModels(context.Background(), inference.Config{LibraryPath: s.Get("onnxruntime_lib"),
			ModelsDir: s.Get("models_dir"), Logger: slog.New(slog.DiscardHandler)}); err != nil {
			return fmt.Errorf("%w; replace the file with a whole copy (the MusiCNN ONNX models)", err)
		}
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			return fmt.Errorf("ffmpeg not found on PATH: install it (Debian: apt-get install ffmpeg, or `make deps`)")
		}
		return nil
	}
	return fmt.Errorf("analyzer: unknown analyzer %q (musicnn, noop, script:SCENARIO)", name)
}
