package audio

import (
	"strings"

	"github.com/nomarr/nomarr/core/worker"
)

// ioPhrases are the texts of the errno values that tell of a storage or
// network file system in trouble, not of the file's content, as ffmpeg
// prints them (strerror; glibc's wording, then musl's where it differs):
// EIO, ESTALE, ETIMEDOUT, ENOTCONN, EHOSTDOWN, EHOSTUNREACH, and ENXIO and
// ENODEV ("No such device" is the start of "No such device or address").
// They are the errors isTemporary takes as transient at checkFile's own
// stat and open.
var ioPhrases = []string{
	"input/output error", "i/o error",
	"stale file handle",
	"connection timed out", "operation timed out",
	"transport endpoint is not connected", "socket not connected",
	"host is down",
	"no route to host", "host is unreachable",
	"no such device",
}

// readFailure returns the first of ffmpeg's lines (as stderrLines gives
// them) that reports an I/O error (ioPhrases) outside quotes, cut for a
// reason; "" when none does.
//
// A few demuxers also return EIO for a damaged file, whose decode then
// fails as Transient: it is retried a bounded number of times before it is
// failed, where a network file system's hiccup taken as Permanent would
// fail a file for good.
func readFailure(lines, unquoted []string) string {
	for i, u := range unquoted {
		u = strings.ToLower(u)
		for _, p := range ioPhrases {
			if strings.Contains(u, p) {
				return reasonLine(lines[i])
			}
		}
	}
	return ""
}

// classifyCleanExit classifies the stderr of an ffmpeg that exited with
// status 0: nil, unless it reports an I/O error (readFailure), then a
// Transient error. ffmpeg (5.x and later) takes a failed read in the middle
// of the input for its end: it prints the error and exits 0 with the audio
// decoded so far, which must not pass for the whole file.
func classifyCleanExit(stderr []byte, input string) *Error {
	lines, unquoted, _ := stderrLines(stderr, input)
	if l := readFailure(lines, unquoted); l != "" {
		return &Error{Class: worker.Transient, Reason: "file temporarily unreadable: " + l}
	}
	return nil
}
