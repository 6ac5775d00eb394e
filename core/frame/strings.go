package frame

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/health"
)

// appendUnescaped appends the decoded contents of a JSON string to dst; s is
// the text between the quotes. Decoding follows encoding/json: an unpaired
// UTF-16 surrogate escape becomes U+FFFD, raw bytes are copied as they are
// (see toString for invalid UTF-8). It reports false if s is not valid
// JSON string contents (raw '"' or control character, malformed escape).
func appendUnescaped(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i
			for j < len(s) && plain[s[j]] {
				j++
			}
			if j == i { // '"' or a control character
				return dst, false
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return dst, false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[i:])
			if r < 0 {
				return dst, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2 := hex4(s[i:]); r2 >= 0 {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, false
		}
		i += 2
	}
	return dst, true
}

// hex4 returns the code unit of a `\uXXXX` escape at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// escapeLen returns the length of the valid escape sequence at the start of
// s (which starts with '\\'), or 0 if it is malformed.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if hex4(s) >= 0 {
			return 6
		}
	}
	return 0
}

// reuse returns *cache if it equals b, and otherwise stores toString(b) in
// *cache and returns it. The cache always holds valid UTF-8, so a match
// means b needs no repair.
func reuse(cache *string, b []byte) string {
	if string(b) != *cache {
		*cache = toString(b)
	}
	return *cache
}

// toString copies b into a new string, replacing each byte of invalid UTF-8
// with U+FFFD (as encoding/json does).
func toString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// internPhase returns the defined phase constant equal to b without
// allocating, or a copy of b for any other value.
func internPhase(b []byte) health.Phase {
	switch string(b) {
	case string(health.Initializing):
		return health.Initializing
	case string(health.LoadingModels):
		return health.LoadingModels
	case string(health.Idle):
		return health.Idle
	case string(health.Processing):
		return health.Processing
	case string(health.BackingOff):
		return health.BackingOff
	case string(health.Paused):
		return health.Paused
	case string(health.Stopping):
		return health.Stopping
	}
	return health.Phase(toString(b))
}

// internStatus returns a shared string for common status values and a copy
// of b otherwise.
func internStatus(b []byte) string {
	switch string(b) {
	case "ok":
		return "ok"
	case "healthy":
		return "healthy"
	case "pending":
		return "pending"
	case "unhealthy":
		return "unhealthy"
	case "failed":
		return "failed"
	case "starting":
		return "starting"
	case "running":
		return "running"
	case "degraded":
		return "degraded"
	case "stopping":
		return "stopping"
	case "error":
		return "error"
	}
	return toString(b)
}
