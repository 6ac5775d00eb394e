package frame

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Append appends one complete frame line, `HEALTH|{json}\n`, to dst and
// returns the extended slice.
//
// Invariants:
//   - The output is exactly Prefix, one JSON object, and a single '\n'; the
//     JSON never contains a raw newline, so one call produces one line.
//   - Keys appear in a fixed order: component_id, status, phase, current_job,
//     progress, seq, pid, files_processed, errors, consecutive_errors,
//     discovery_attempts, claim_conflicts, avg_processing_ms, cache_loaded.
//     component_id and status are always written; every other field is
//     omitted when it holds its zero value. Equal frames give equal bytes.
//   - Strings are escaped like encoding/json (without HTML escaping): quotes,
//     backslashes, control characters, U+2028 and U+2029 are escaped, and
//     every byte of invalid UTF-8 becomes \ufffd.
//   - avg_processing_ms is written in the shortest form that reads back to the
//     same float64; NaN and ±Inf are written as 0 (and therefore omitted).
//   - Append does not allocate when dst has enough spare capacity.
//
// Append does not enforce MaxLine: a frame with very long strings yields a
// line the reader will drop with ErrTooLong.
func Append(dst []byte, f *Frame) []byte {
	dst = append(dst, Prefix...)
	dst = append(dst, `{"component_id":`...)
	dst = appendString(dst, f.ComponentID)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, f.Status)
	if f.Phase != "" {
		dst = append(dst, `,"phase":`...)
		dst = appendString(dst, string(f.Phase))
	}
	if f.CurrentJob != "" {
		dst = append(dst, `,"current_job":`...)
		dst = appendString(dst, f.CurrentJob)
	}
	if f.Progress != 0 {
		dst = append(dst, `,"progress":`...)
		dst = strconv.AppendInt(dst, f.Progress, 10)
	}
	if f.Seq != 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendUint(dst, f.Seq, 10)
	}
	if f.PID != 0 {
		dst = append(dst, `,"pid":`...)
		dst = strconv.AppendInt(dst, int64(f.PID), 10)
	}
	if f.FilesProcessed != 0 {
		dst = append(dst, `,"files_processed":`...)
		dst = strconv.AppendInt(dst, f.FilesProcessed, 10)
	}
	if f.Errors != 0 {
		dst = append(dst, `,"errors":`...)
		dst = strconv.AppendInt(dst, f.Errors, 10)
	}
	if f.ConsecutiveErrors != 0 {
		dst = append(dst, `,"consecutive_errors":`...)
		dst = strconv.AppendInt(dst, f.ConsecutiveErrors, 10)
	}
	if f.DiscoveryAttempts != 0 {
		dst = append(dst, `,"discovery_attempts":`...)
		dst = strconv.AppendInt(dst, f.DiscoveryAttempts, 10)
	}
	if f.ClaimConflicts != 0 {
		dst = append(dst, `,"claim_conflicts":`...)
		dst = strconv.AppendInt(dst, f.ClaimConflicts, 10)
	}
	if ms := f.AvgProcessingMs; ms != 0 && !math.IsNaN(ms) && !math.IsInf(ms, 0) {
		dst = append(dst, `,"avg_processing_ms":`...)
		dst = appendFloat(dst, ms)
	}
	if f.CacheLoaded {
		dst = append(dst, `,"cache_loaded":true`...)
	}
	return append(dst, '}', '\n')
}

// appendFloat writes a finite, non-zero v the way encoding/json does: the
// shortest decimal that parses back to v, in exponent form only for very
// small or very large magnitudes.
func appendFloat(dst []byte, v float64) []byte {
	abs := math.Abs(v)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, v, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// safeASCII[c] is true for ASCII bytes that need no escaping in a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a quoted JSON string. See Append for the rules.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
