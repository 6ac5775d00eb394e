//go:build cgo && !nolibav

package audio

/*
#cgo pkg-config: libavformat libavcodec libswresample libavutil
#include <stdlib.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include "libav.h"

static int nm_averror_exit(void) { return AVERROR_EXIT; }
static void nm_quiet(void) { av_log_set_level(AV_LOG_ERROR); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/nomarr/nomarr/core/worker"
)

// libav logs at the level of the ffmpeg child's `-v error`: its warnings
// about files it decodes anyway ("bytes of comment header remain") would
// otherwise reach the user's terminal through the worker's stderr.
func init() { C.nm_quiet() }

// HasLibav reports whether this build decodes through libav (DecoderLibav).
const HasLibav = true

// maxErrorRate is ffmpeg's -max_error_rate default: a decode in which more
// than this share of the packets and frames failed is an error (ffmpeg's
// exit status 69), not a file with a few damaged frames.
const maxErrorRate = 2.0 / 3

// runLibav decodes the file at abs in this process and hands the samples to
// fn, at most maxSamples (negative: no limit). The samples are those of
// `ffmpeg -map a:0 -ac 1 -ar 16000 -rematrix_maxval 1 -f f32le` of the same
// libav build: the same demuxer, decoder and resampler, set up as ffmpeg
// sets them up. ctx and opt.Timeout interrupt blocking reads (AVIO's
// interrupt callback) and are checked between blocks.
func runLibav(parent context.Context, opt Options, abs string, maxSamples int, fn func([]float32) error) (int, error) {
	ctx, cancel := parent, context.CancelFunc(func() {})
	if opt.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, opt.Timeout)
	}
	defer cancel()
	// The interrupt flag lives in C memory: the C side polls it while Go
	// may set it from another goroutine.
	flag := (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(flag))
	var done atomic.Bool
	stopWatch := context.AfterFunc(ctx, func() {
		if !done.Load() {
			atomic.StoreInt32((*int32)(unsafe.Pointer(flag)), 1)
		}
	})
	defer stopWatch()
	defer done.Store(true)

	url := C.CString("file:" + abs)
	defer C.free(unsafe.Pointer(url))
	var d *C.nm_dec
	var stage C.int
	var codec [64]C.char
	if ret := C.nm_open(url, (*C.int)(flag), &d, &stage, &codec[0], C.int(len(codec))); ret < 0 {
		if e := ctxError(parent, ctx, opt.Timeout); e != nil {
			return 0, e
		}
		return 0, openError(int(ret), int(stage), C.GoString(&codec[0]), abs)
	}
	defer C.nm_close(d)

	total := 0
	for {
		if e := ctxError(parent, ctx, opt.Timeout); e != nil {
			return 0, e
		}
		var out *C.float
		n := int(C.nm_read(d, &out))
		if n < 0 {
			if e := ctxError(parent, ctx, opt.Timeout); e != nil {
				return 0, e
			}
			if err := readError(n); err != nil {
				return 0, err
			}
			break // like ffmpeg: a failed read ends the input
		}
		if n == 0 {
			break
		}
		block := unsafe.Slice((*float32)(unsafe.Pointer(out)), n)
		if maxSamples >= 0 && total+n >= maxSamples {
			block = block[:maxSamples-total]
			total += len(block)
			if len(block) > 0 {
				if err := fn(block); err != nil {
					return 0, err
				}
			}
			return total, nil
		}
		total += n
		if err := fn(block); err != nil {
			return 0, err
		}
	}
	var failed, decoded C.int64_t
	var first C.int
	C.nm_stats(d, &failed, &decoded, &first)
	if decoded == 0 {
		// ffmpeg cannot set up its filters without a frame: exit 1.
		return 0, &Error{Class: worker.Permanent, Reason: "not audio: Cannot determine format of input stream 0:0 after EOF"}
	}
	if f := float64(failed); f > 0 && f > float64(failed+decoded)*maxErrorRate {
		return 0, &Error{Class: worker.Permanent, Reason: fmt.Sprintf("corrupt: %d of %d packets failed to decode: %s",
			int64(failed), int64(failed+decoded), avError(int(first)))}
	}
	return total, nil
}

// avError is the text of a libav error code.
func avError(code int) string {
	var buf [128]C.char
	C.av_strerror(C.int(code), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

// errnoOf is the errno of an AVERROR(errno), or 0.
func errnoOf(code int) syscall.Errno {
	if code < 0 && code > -4096 {
		return syscall.Errno(-code)
	}
	return 0
}

// openError classifies a failure to open the file for decoding, as
// classifyExit classes ffmpeg's report of the same failure.
func openError(code, stage int, codec, abs string) error {
	msg := avError(code)
	if en := errnoOf(code); en != 0 {
		switch {
		case en == syscall.ENOENT || en == syscall.ENOTDIR:
			if _, err := os.Stat(abs); err != nil {
				return &Error{Class: worker.Permanent, Reason: "missing", Err: en, Missing: true}
			}
		case en == syscall.EACCES || en == syscall.EPERM:
			return &Error{Class: worker.Permanent, Reason: "unreadable: " + msg, Err: en}
		case en == syscall.ENOMEM || en == syscall.EAGAIN || en == syscall.EMFILE || en == syscall.ENFILE:
			return &Error{Class: worker.Transient, Reason: "decoder out of resources: " + msg, Err: en}
		case isTemporary(en):
			return &Error{Class: worker.Transient, Reason: "file temporarily unreadable: " + msg, Err: en}
		}
	}
	switch stage {
	case C.NM_NO_AUDIO:
		return &Error{Class: worker.Permanent, Reason: "not audio: Stream map 'a:0' matches no streams"}
	case C.NM_NO_DECODER:
		return &Error{Class: worker.Permanent, Reason: fmt.Sprintf("not audio: decoder (codec %s) not found", codec)}
	case C.NM_OPEN_CODEC:
		return &Error{Class: worker.Permanent, Reason: "corrupt: opening the decoder: " + msg}
	}
	return &Error{Class: worker.Permanent, Reason: "not audio: " + msg}
}

// readError classifies a failure in the middle of the decode: nil for a
// read error that ffmpeg takes for the end of the input (a damaged file),
// an *Error for an I/O error or a shortage of memory.
func readError(code int) error {
	en := errnoOf(code)
	switch {
	case en == syscall.ENOMEM || en == syscall.EAGAIN:
		return &Error{Class: worker.Transient, Reason: "decoder out of resources: " + avError(code), Err: en}
	case en != 0 && isTemporary(en):
		return &Error{Class: worker.Transient, Reason: "file temporarily unreadable: " + avError(code), Err: en}
	case code == int(C.nm_averror_exit()) || en == syscall.EINTR:
		return &Error{Class: worker.Transient, Reason: "decode interrupted inside the decoder", Err: errors.New(avError(code))}
	}
	return nil
}
