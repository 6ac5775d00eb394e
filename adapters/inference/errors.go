package inference

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/nomarr/nomarr/core/worker"
)

// Kinds of the errors that no retry of a file can fix (errors.Is works on
// the errors of Init, Load and Predict).
var (
	// ErrLibraryNotFound: the ONNX Runtime library is not at the configured
	// path (or no path is configured).
	ErrLibraryNotFound = errors.New("inference: ONNX Runtime library not found")
	// ErrLibraryLoad: the library exists but cannot be loaded (not a shared
	// library, wrong architecture, missing dependency, another library
	// already loaded).
	ErrLibraryLoad = errors.New("inference: ONNX Runtime library cannot be loaded")
	// ErrModelNotFound: a model file is missing or unreadable, or models_dir
	// is not set.
	ErrModelNotFound = errors.New("inference: model file not found")
	// ErrModelInvalid: a model file does not have the expected inputs and
	// outputs, or ONNX Runtime cannot parse it.
	ErrModelInvalid = errors.New("inference: model file invalid")
	// ErrNoCgo: the binary was built with CGO_ENABLED=0.
	ErrNoCgo = errors.New("inference: built without cgo; ONNX Runtime needs CGO_ENABLED=1 and a C compiler")
)

// fetchHint tells the user how to get the library.
const fetchHint = "run `make deps` (scripts/fetch-ort.sh) or set NOMARR_ONNXRUNTIME_LIB / onnxruntime_lib"

// missingError is a message of its own that unwraps to one of the kinds.
type missingError struct {
	kind error
	msg  string
}

func (e *missingError) Error() string { return e.msg }
func (e *missingError) Unwrap() error { return e.kind }

// LibraryNotFoundIn is the error for an ONNX Runtime library looked for
// in each of paths (the defaults, none set by the user) and found nowhere.
func LibraryNotFoundIn(paths []string) error {
	return &missingError{kind: ErrLibraryNotFound,
		msg: fmt.Sprintf("ONNX Runtime library not found at any of %s; %s", strings.Join(paths, ", "), fetchHint)}
}

func libraryNotFound(path string, cause error) error {
	msg := fmt.Sprintf("ONNX Runtime library not found at %s; %s", path, fetchHint)
	if path == "" {
		msg = "ONNX Runtime library path is not set; " + fetchHint
	} else if cause != nil && !errors.Is(cause, fs.ErrNotExist) {
		msg = fmt.Sprintf("ONNX Runtime library not found at %s (%v); %s", path, cause, fetchHint)
	}
	return &missingError{kind: ErrLibraryNotFound, msg: msg}
}

// Classify maps an error of Init, Models.Load or Models.Predict to the
// worker's error class and, for ServiceDown, the dependency: a missing or
// unloadable library, a missing or invalid model and a build without cgo are
// ServiceDown for worker.DepGPU; any other error (a failed Run on the CPU,
// bad input, a canceled load) is Transient. nil is worker.OK.
func Classify(err error) (worker.Class, string) {
	switch {
	case err == nil:
		return worker.OK, ""
	case errors.Is(err, ErrLibraryNotFound), errors.Is(err, ErrLibraryLoad),
		errors.Is(err, ErrModelNotFound), errors.Is(err, ErrModelInvalid), errors.Is(err, ErrNoCgo):
		return worker.ServiceDown, worker.DepGPU
	default:
		return worker.Transient, ""
	}
}
