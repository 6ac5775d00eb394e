package audio

import (
	"strings"
	"syscall"

	"github.com/nomarr/nomarr/core/worker"
)

// stopExit is the status ffmpeg exits with when it caught a stop signal
// (SIGTERM, SIGINT, SIGQUIT): it stops decoding, writes "Exiting
// normally, received signal N." at the info level (below -v error, so the
// decoder's stderr is empty) and exits 255.
const stopExit = 255

// stopSignals are the signals of a stop: a service manager's, a terminal's,
// a shutdown's. None of them comes from the file being decoded.
var stopSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

// interrupted is the error of a decode stopped from outside rather than
// failed: Class ServiceDown (dependency worker.DepDecoder), so that the
// worker releases the file untouched, without a failure, an attempt or a
// worker error counted (docs/design.md §8; docs/decisions/decoder-errors.md says
// why not Transient).
func interrupted(reason string, err error) *Error {
	return &Error{Class: worker.ServiceDown, Reason: "decode interrupted: " + reason, Err: err, Interrupted: true}
}

// signalExit classifies an ffmpeg that died of signal sig: interrupted for
// a stop signal, Transient for any other (a crash on the file, SIGKILL from
// the kernel's out-of-memory killer): retried a bounded number of times,
// never failed at once, never held back forever.
func signalExit(sig syscall.Signal, err error) *Error {
	for _, s := range stopSignals {
		if sig == s {
			return interrupted("ffmpeg stopped by signal: "+sig.String(), err)
		}
	}
	return &Error{Class: worker.Transient, Reason: "ffmpeg killed by signal: " + sig.String(), Err: err}
}

// stopStatus classifies an ffmpeg that exited with stopExit, or returns nil
// when code is another status. 255 is ffmpeg's exit after a stop signal,
// and in ffmpeg ≥ 6.1 also that of an error numbered -1 (EPERM), which it
// always reports on stderr first. So 255 is interrupted when stderr says
// the signal came ("received signal", shown at a log level above error)
// or says nothing at all; with other lines it is Transient (a stop during
// a decode that had complained of damaged frames, or a real error): never
// Permanent, as a stop must not fail a file for good.
func stopStatus(code int, stderr []byte, input string, err error) *Error {
	if code != stopExit {
		return nil
	}
	lines, unquoted, _ := stderrLines(stderr, input)
	for _, u := range unquoted {
		if strings.Contains(strings.ToLower(u), "received signal") {
			return interrupted("ffmpeg exited after a stop signal: "+reasonLine(u), err)
		}
	}
	if len(lines) == 0 {
		return interrupted("ffmpeg exited 255 without a diagnostic (its exit after a stop signal)", err)
	}
	return &Error{Class: worker.Transient, Reason: "ffmpeg exit status 255 (a stop signal, or: " + reasonLine(lines[0]) + ")", Err: err}
}
