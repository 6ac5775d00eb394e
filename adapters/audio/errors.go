package audio

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/nomarr/nomarr/core/worker"
)

// Error is a decode failure with its class (DESIGN §8).
//
// Reasons: "missing", "unreadable…", "empty", "too short: 0.5 s",
// "not audio: <ffmpeg's first error line>", "corrupt: <…>" (Permanent);
// "decode timed out after 5m0s", "decode canceled", "ffmpeg killed by
// signal: …", "file temporarily unreadable", "ffmpeg out of resources: …"
// (Transient); "ffmpeg not found or not executable …: install ffmpeg …",
// "ffmpeg is broken: …" (ServiceDown, dependency worker.DepDecoder).
type Error struct {
	Class  worker.Class
	Reason string
	Err    error
	// Missing: the file is not there (Reason "missing"); the worker marks
	// it missing rather than failed (worker.Result.Missing).
	Missing bool
}

func (e *Error) Error() string {
	s := "audio: " + string(e.Class) + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Dependency is the unavailable dependency of a ServiceDown error
// (worker.DepDecoder), else "".
func (e *Error) Dependency() string {
	if e.Class == worker.ServiceDown {
		return worker.DepDecoder
	}
	return ""
}

// maxReasonLine bounds the ffmpeg line quoted in a reason.
const maxReasonLine = 200

// logContext matches the "[mp3 @ 0x55d0c0a1b2c0] " prefix of ffmpeg's log
// lines (the address changes every run).
var logContext = regexp.MustCompile(`^\[[^\]]* @ 0x[0-9a-fA-F]+\] `)

// classifyExit classifies an ffmpeg that exited with a non-zero code, from
// its (bounded) stderr. input is the -i argument, which ffmpeg prefixes to
// the errors of opening the input.
func classifyExit(code int, stderr []byte, input string, err error) *Error {
	var lines []string
	openFailed := false
	for _, l := range strings.Split(string(bytes.ToValidUTF8(stderr, []byte("?"))), "\n") {
		l = strings.TrimSpace(strings.TrimRight(l, "\r"))
		l = logContext.ReplaceAllString(l, "")
		if rest, ok := strings.CutPrefix(l, input+": "); ok {
			l, openFailed = rest, true
		}
		if l != "" {
			lines = append(lines, l)
		}
	}
	first := fmt.Sprintf("ffmpeg exit status %d", code)
	if len(lines) > 0 {
		first = lines[0]
		if len(first) > maxReasonLine {
			first = strings.ToValidUTF8(first[:maxReasonLine], "") + "…"
		}
	}
	all := strings.ToLower(strings.Join(lines, "\n"))
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(all, s) {
				return true
			}
		}
		return false
	}
	switch {
	case code == 126 || code == 127 || has("error while loading shared libraries",
		"unrecognized option", "option not found", "error splitting the argument list",
		"unknown encoder", "requested output format", "protocol not found",
		"no such filter", "unknown input format"):
		// ffmpeg itself (or its build) cannot do the job: every file would
		// fail the same way, so it must not fail them.
		return &Error{Class: worker.ServiceDown, Reason: "ffmpeg is broken: " + first, Err: err}
	case has("cannot allocate memory", "resource temporarily unavailable",
		"too many open files", "out of memory"):
		return &Error{Class: worker.Transient, Reason: "ffmpeg out of resources: " + first, Err: err}
	case has("no such file or directory"):
		return &Error{Class: worker.Permanent, Reason: "missing", Err: err, Missing: true}
	case has("permission denied"):
		return &Error{Class: worker.Permanent, Reason: "unreadable: " + first, Err: err}
	case openFailed || has("matches no streams", "does not contain any stream",
		"cannot determine format", "could not find codec parameters",
		"moov atom not found", "decoder (codec", "failed to read frame size"):
		return &Error{Class: worker.Permanent, Reason: "not audio: " + first, Err: err}
	default:
		return &Error{Class: worker.Permanent, Reason: "corrupt: " + first, Err: err}
	}
}
