package audio

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nomarr/nomarr/core/worker"
)

// Error is a decode failure with its class (docs/design.md §8).
//
// Reasons: "missing", "unreadable…", "empty", "too short: 0.5 s",
// "not audio: <ffmpeg's first error line>", "corrupt: <…>" (Permanent);
// "decode timed out after 5m0s", "ffmpeg killed by signal: …" (a signal
// other than a stop's), "ffmpeg exit status 255 (…)", "file temporarily
// unreadable" (reported by ffmpeg: followed by its line), "ffmpeg out of
// resources: …" (Transient); "ffmpeg not found or not executable …:
// install ffmpeg …", "ffmpeg is broken: …", "decode interrupted: …"
// (ServiceDown, dependency worker.DepDecoder).
type Error struct {
	Class  worker.Class
	Reason string
	Err    error
	// Missing: the file is not there (Reason "missing"); the worker marks
	// it missing rather than failed (worker.Result.Missing).
	Missing bool
	// Interrupted: the decode was stopped from outside (the context
	// canceled, a stop signal), which says nothing of the file (Reason
	// "decode interrupted: …", Class ServiceDown).
	Interrupted bool
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

// pathMark replaces the file's path in ffmpeg's stderr before it is
// classified. It holds none of the phrases classifyExit looks for.
const pathMark = "<file>"

// exitChecks are what classifyExit may check beyond ffmpeg's stderr, each
// only when the stderr calls for it. A nil check is not made: the stderr
// alone decides, as if the check had confirmed it.
type exitChecks struct {
	// decoderWorks runs the preflight (a decode of a known-good file with
	// the same ffmpeg and options) and returns nil when it succeeds.
	decoderWorks func() error
	// fileGone reports whether the file is no longer there.
	fileGone func() bool
}

// classifyExit classifies an ffmpeg that exited with a non-zero code, from
// its (bounded) stderr. input is the -i argument, "file:" plus the file's
// absolute path.
//
// Invariants:
//   - The file's path never drives the class: every occurrence of input and
//     of the absolute path (raw, as av_log sanitizes it, cut by the stderr
//     limit, or split over lines by a newline in a name) is replaced with
//     pathMark before any phrase is looked for, so a folder named "Out of
//     Memory" or "Protocol Not Found" changes nothing.
//   - Phrases count only outside quotes: ffmpeg quotes names and values
//     ('…'), and those come from the file as often as not (a concat list
//     names other files: "Unsafe file name 'Out of Memory.mp3'").
//   - The failure to open the input is recognised in ffmpeg 5.x's form
//     ("<input>: <error>") and in ffmpeg ≥ 6.1's ("[in#0 @ …] Error opening
//     input: <error>", "Error opening input file <input>.", "Error opening
//     input files: <error>"); the reason quotes <error>, never the path.
//   - A single file is ServiceDown only when the preflight fails too. The
//     "ffmpeg is broken" phrases (and exit codes 126, 127) are only a reason
//     to run it: text in ffmpeg's stderr can come from the file (a playlist
//     or concat list names other files, demuxers quote its contents), and a
//     file wrongly held ServiceDown is never failed and opens the decoder
//     breaker again on every half-open try. A broken ffmpeg fails the
//     preflight as it fails every file, so confirmed outages keep their
//     class, and a file whose text merely looks like one is judged as the
//     file it is (not audio, corrupt, …).
//   - An I/O error that ffmpeg reports (EIO, ESTALE, ETIMEDOUT, ENOTCONN,
//     EHOSTDOWN, EHOSTUNREACH, ENXIO, ENODEV: readFailure) is Transient,
//     as checkFile classes them at its own stat and open: a network file
//     system's hiccup must not fail a file for good.
//   - "No such file or directory" is "missing" only if the file is gone:
//     checkFile saw it just before, so while it is still there the message
//     is about a file it refers to.
func classifyExit(code int, stderr []byte, input string, err error, checks exitChecks) *Error {
	lines, unquoted, openFailed := stderrLines(stderr, input)
	first := fmt.Sprintf("ffmpeg exit status %d", code)
	if len(lines) > 0 {
		first = reasonLine(lines[0])
	}
	all := strings.ToLower(strings.Join(unquoted, "\n"))
	ioLine := readFailure(lines, unquoted)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(all, s) {
				return true
			}
		}
		return false
	}
	broken := code == 126 || code == 127 || has("error while loading shared libraries",
		"unrecognized option", "option not found", "error splitting the argument list",
		"unknown encoder", "requested output format", "protocol not found",
		"no such filter", "unknown input format")
	switch {
	case broken && (checks.decoderWorks == nil || checks.decoderWorks() != nil):
		// ffmpeg itself (or its build) cannot do the job: every file would
		// fail the same way, so it must not fail them.
		return &Error{Class: worker.ServiceDown, Reason: "ffmpeg is broken: " + first, Err: err}
	case has("cannot allocate memory", "resource temporarily unavailable",
		"too many open files", "out of memory"):
		return &Error{Class: worker.Transient, Reason: "ffmpeg out of resources: " + first, Err: err}
	case has("no such file or directory") && (checks.fileGone == nil || checks.fileGone()):
		return &Error{Class: worker.Permanent, Reason: "missing", Err: err, Missing: true}
	case has("permission denied"):
		return &Error{Class: worker.Permanent, Reason: "unreadable: " + first, Err: err}
	case ioLine != "":
		// Before the open failure: ffmpeg 5.x reports a failed read as it
		// reports a failed open ("<input>: Input/output error").
		return &Error{Class: worker.Transient, Reason: "file temporarily unreadable: " + ioLine, Err: err}
	case openFailed || has("matches no streams", "does not contain any stream",
		"cannot determine format", "could not find codec parameters",
		"moov atom not found", "decoder (codec", "failed to read frame size"):
		return &Error{Class: worker.Permanent, Reason: "not audio: " + first, Err: err}
	default:
		return &Error{Class: worker.Permanent, Reason: "corrupt: " + first, Err: err}
	}
}

// stderrLines splits ffmpeg's stderr into its non-empty lines, each without
// its log context and with the file's path replaced by pathMark (see
// withoutPath), the open failure's prefix removed; unquoted holds the same
// lines without their quoted parts (withoutQuoted), where phrases are
// looked for. openFailed: a line reported that the input could not be
// opened (openFailure).
func stderrLines(stderr []byte, input string) (lines, unquoted []string, openFailed bool) {
	for _, l := range strings.Split(string(bytes.ToValidUTF8(withoutPath(stderr, input), []byte("?"))), "\n") {
		l = strings.TrimSpace(strings.TrimRight(l, "\r"))
		l = logContext.ReplaceAllString(l, "")
		if rest, ok := openFailure(l); ok {
			l, openFailed = rest, true
		}
		if l != "" {
			lines = append(lines, l)
			unquoted = append(unquoted, withoutQuoted(l))
		}
	}
	return lines, unquoted, openFailed
}

// reasonLine is l cut to maxReasonLine bytes for a reason.
func reasonLine(l string) string {
	if len(l) > maxReasonLine {
		return strings.ToValidUTF8(l[:maxReasonLine], "") + "…"
	}
	return l
}

// openFailure reports whether l (without its log context, the path replaced
// by pathMark) is ffmpeg's report that it could not open the input, and
// returns the error it gives ("" when the line gives none).
func openFailure(l string) (string, bool) {
	if rest, ok := strings.CutPrefix(l, pathMark+": "); ok { // ffmpeg ≤ 6.0
		return rest, true
	}
	// ffmpeg ≥ 6.1: "[in#0 @ …] Error opening input: E",
	// "Error opening input file <input>.", "Error opening input files: E".
	for _, p := range []string{"Error opening input: ", "Error opening input files: "} {
		if rest, ok := strings.CutPrefix(l, p); ok {
			return rest, true
		}
	}
	if strings.HasPrefix(l, "Error opening input file ") {
		return "", true
	}
	return l, false
}

// withoutQuoted returns l without the text from its first single quote to
// its last (a lone quote, an apostrophe, stays).
func withoutQuoted(l string) string {
	i, j := strings.IndexByte(l, '\''), strings.LastIndexByte(l, '\'')
	if i < 0 || j == i {
		return l
	}
	return l[:i] + l[j+1:]
}

// withoutPath returns stderr with every occurrence of input ("file:" plus
// the absolute path) and of the bare absolute path replaced by pathMark,
// both as given and as ffmpeg's log prints them (control characters other
// than \b, \t, \n, \v, \f and \r turned into '?'). The replacement is
// made on the whole text, before it is split into lines, so that a path
// holding a newline goes too. A path cut off at the end of the (bounded)
// stderr is removed as well.
func withoutPath(stderr []byte, input string) []byte {
	abs := strings.TrimPrefix(input, "file:")
	if abs == "" {
		return stderr
	}
	var forms []string
	for _, p := range []string{input, abs, sanitized(input), sanitized(abs)} {
		if p != "" && !slices.Contains(forms, p) {
			forms = append(forms, p) // each "file:" form before its bare one
		}
	}
	out := stderr
	for _, f := range forms {
		out = bytes.ReplaceAll(out, []byte(f), []byte(pathMark))
	}
	// A tail that is the start of a path form: ffmpeg was cut off in it.
	for i := max(0, len(out)-len(forms[0])); i < len(out); i++ {
		tail := string(out[i:])
		if len(tail) >= 2 && slices.ContainsFunc(forms, func(f string) bool { return strings.HasPrefix(f, tail) }) {
			return append(out[:i:i], pathMark...)
		}
	}
	return out
}

// sanitized is s as av_log prints it: bytes below 0x08 and from 0x0E to
// 0x1F become '?'.
func sanitized(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x08 || (c > 0x0D && c < 0x20) {
			b[i] = '?'
		}
	}
	return string(b)
}
