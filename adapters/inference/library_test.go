//go:build cgo

package inference

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLibrary reads the dynamic symbols of this test binary, which a
// build without cgo links statically, and checks the runtime main_test.go
// finds.
func TestCheckLibrary(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.so")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text.so")
	if err := os.WriteFile(text, []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable() // an ELF file for this machine, without OrtGetApiBase
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
		kind       error
	}{
		{filepath.Join(dir, "nope.so"), "not found", ErrLibraryNotFound},
		{dir, "is a directory", ErrLibraryNotFound},
		{empty, "not a shared library", ErrLibraryLoad},
		{text, "not a shared library", ErrLibraryLoad},
		{self, "does not export OrtGetApiBase", ErrLibraryLoad},
	} {
		err := CheckLibrary(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "make deps") {
			t.Errorf("CheckLibrary(%s) = %v, want %q (%v) with the fix", filepath.Base(c.path), err, c.want, c.kind)
		}
	}
	if testLibErr != nil {
		t.Fatalf("the ONNX Runtime library for the tests: %v", testLibErr)
	}
	if err := CheckLibrary(testLib); err != nil {
		t.Errorf("CheckLibrary(the fetched runtime %s) = %v", testLib, err)
	}
}
