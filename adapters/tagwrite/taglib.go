//go:build cgo && !notaglib

package tagwrite

/*
#cgo pkg-config: taglib
#cgo CXXFLAGS: -std=c++17
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// haveTagLib: Read and Write work in this build.
const haveTagLib = true

// The C format numbers must match Format (a mismatch does not compile).
var (
	_ [int(C.NOM_FMT_MP3) - int(MP3)]struct{}         = [0]struct{}{}
	_ [int(C.NOM_FMT_MP4) - int(MP4)]struct{}         = [0]struct{}{}
	_ [int(C.NOM_FMT_FLAC) - int(FLAC)]struct{}       = [0]struct{}{}
	_ [int(C.NOM_FMT_VORBIS) - int(Vorbis)]struct{}   = [0]struct{}{}
	_ [int(C.NOM_FMT_OPUS) - int(Opus)]struct{}       = [0]struct{}{}
	_ [int(C.NOM_FMT_OGGFLAC) - int(OggFLAC)]struct{} = [0]struct{}{}
	_ [int(C.NOM_FMT_WAV) - int(WAV)]struct{}         = [0]struct{}{}
	_ [int(C.NOM_FMT_AIFF) - int(AIFF)]struct{}       = [0]struct{}{}
	_ [int(C.NOM_FMT_WAVPACK) - int(WavPack)]struct{} = [0]struct{}{}
	_ [int(C.NOM_FMT_APE) - int(APE)]struct{}         = [0]struct{}{}
	_ [int(C.NOM_FMT_ASF) - int(ASF)]struct{}         = [0]struct{}{}
)

// shimError is the error of a failed shim call that returned rc (see
// shim.h and taglibError).
func shimError(rc, errNo C.int, msg *C.char) error {
	e := &taglibError{msg: "failed", errno: syscall.Errno(errNo), invalid: rc == C.NOM_ERR_INVALID}
	if msg != nil {
		e.msg = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	return e
}

func encodeRecords(recs [][2]string) []byte {
	var b []byte
	for _, r := range recs {
		for _, s := range r {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

func decodeRecords(b []byte) ([][2]string, error) {
	var out [][2]string
	field := func() (string, bool) {
		if len(b) < 4 {
			return "", false
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(len(b)) < uint64(n) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	for len(b) > 0 {
		k, ok1 := field()
		v, ok2 := field()
		if !ok1 || !ok2 {
			return nil, errors.New("taglib: malformed reply")
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// taglibWrite replaces the tags whose names start with prefix in the file
// open read-write as f by recs (full names), and edits its standard fields
// by std: records ("-"+name, value) remove that value, ("+"+name, value)
// append it (see shim.h).
func taglibWrite(f *os.File, format Format, prefix string, recs, std [][2]string) error {
	buf, sbuf := encodeRecords(recs), encodeRecords(std)
	cbuf := C.CBytes(append(buf, 0)) // never empty, so never a nil pointer
	defer C.free(cbuf)
	csbuf := C.CBytes(append(sbuf, 0))
	defer C.free(csbuf)
	cname, cprefix := C.CString(f.Name()), C.CString(prefix)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(cprefix))
	var errNo C.int
	var msg *C.char
	rc := C.nom_tag_write(C.int(f.Fd()), cname, C.int(format), cprefix, (*C.char)(cbuf), C.size_t(len(buf)),
		(*C.char)(csbuf), C.size_t(len(sbuf)), &errNo, &msg)
	runtime.KeepAlive(f)
	if rc != 0 {
		return shimError(rc, errNo, msg)
	}
	return nil
}

// taglibRead returns the tags whose names start with prefix in the file open
// as f, one record (full name, value) per value, then the values of the
// standard fields named in names, one record (name, value) per value.
func taglibRead(f *os.File, format Format, prefix string, names []string) ([][2]string, error) {
	nrecs := make([][2]string, len(names))
	for i, n := range names {
		nrecs[i] = [2]string{n, ""}
	}
	nbuf := encodeRecords(nrecs)
	cnbuf := C.CBytes(append(nbuf, 0))
	defer C.free(cnbuf)
	cname, cprefix := C.CString(f.Name()), C.CString(prefix)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(cprefix))
	var errNo C.int
	var msg, out *C.char
	var outLen C.size_t
	rc := C.nom_tag_read(C.int(f.Fd()), cname, C.int(format), cprefix, (*C.char)(cnbuf), C.size_t(len(nbuf)), &out, &outLen, &errNo, &msg)
	runtime.KeepAlive(f)
	if rc != 0 {
		return nil, shimError(rc, errNo, msg)
	}
	defer C.free(unsafe.Pointer(out))
	return decodeRecords(C.GoBytes(unsafe.Pointer(out), C.int(outLen)))
}
