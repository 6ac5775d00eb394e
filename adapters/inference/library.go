package inference

import (
	"debug/elf"
	"fmt"
	"os"
	"runtime"
)

// elfMachine is the ELF machine of this build's architecture.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// CheckLibrary tells, without loading it, whether path looks like an ONNX
// Runtime shared library this process could load: an ELF shared object for
// this machine that exports OrtGetApiBase. The main process checks it once
// before spawning workers, so that a wrong or broken file is one clear
// message at start rather than every worker failing on its first job.
func CheckLibrary(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		if err == nil {
			err = fmt.Errorf("is a directory")
		}
		return libraryNotFound(path, err)
	}
	f, err := elf.Open(path)
	if err != nil {
		return &missingError{kind: ErrLibraryLoad,
			msg: fmt.Sprintf("ONNX Runtime library at %s is not a shared library (%v); %s", path, err, fetchHint)}
	}
	defer f.Close()
	if want, ok := elfMachine[runtime.GOARCH]; ok && f.Machine != want {
		return &missingError{kind: ErrLibraryLoad,
			msg: fmt.Sprintf("ONNX Runtime library at %s is built for %s, not this machine (%s); %s", path, f.Machine, runtime.GOARCH, fetchHint)}
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return &missingError{kind: ErrLibraryLoad,
			msg: fmt.Sprintf("ONNX Runtime library at %s has no symbol table (%v); %s", path, err, fetchHint)}
	}
	for _, s := range syms {
		if s.Name == "OrtGetApiBase" && s.Section != elf.SHN_UNDEF {
			return nil
		}
	}
	return &missingError{kind: ErrLibraryLoad,
		msg: fmt.Sprintf("%s is not an ONNX Runtime library (it does not export OrtGetApiBase); %s", path, fetchHint)}
}
