package frame

import (
	"encoding/binary"
	"math"
	"strconv"
)

// The fast path decodes the common shape of a frame payload (what Append
// writes) in a single strict pass without fastjson: one flat JSON object whose
// keys and string values contain no escapes and whose values are strings,
// numbers, true, false or null. It reports false for anything else — nested
// values, escapes, raw control characters, a known field of the wrong type,
// out-of-range numbers, syntax errors — and the general path (fastjson) then
// decides, including every error. Whenever the fast path succeeds its result
// is the one the general path would give (FuzzFastPath checks this).

// field identifies a known key.
type field uint8

const (
	fUnknown field = iota
	fComponentID
	fStatus
	fPhase
	fCurrentJob
	fProgress
	fSeq
	fPID
	fFilesProcessed
	fErrors
	fConsecutiveErrors
	fDiscoveryAttempts
	fClaimConflicts
	fAvgProcessingMs
	fCacheLoaded
)

func fieldOf(key []byte) field {
	switch string(key) {
	case "component_id":
		return fComponentID
	case "status":
		return fStatus
	case "phase":
		return fPhase
	case "current_job":
		return fCurrentJob
	case "progress":
		return fProgress
	case "seq":
		return fSeq
	case "pid":
		return fPID
	case "files_processed":
		return fFilesProcessed
	case "errors":
		return fErrors
	case "consecutive_errors":
		return fConsecutiveErrors
	case "discovery_attempts":
		return fDiscoveryAttempts
	case "claim_conflicts":
		return fClaimConflicts
	case "avg_processing_ms":
		return fAvgProcessingMs
	case "cache_loaded":
		return fCacheLoaded
	}
	return fUnknown
}

// plain[c] is true for bytes that may appear unescaped in a JSON string and
// need no further attention: everything except control characters, '"' and
// '\\'. Bytes >= 0x80 are plain; invalid UTF-8 is repaired by toString.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' {
		if c := b[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
		i++
	}
	return i
}

// special reports whether any of the 8 bytes packed in x is '"', '\\' or a
// control character. The classic "has zero byte" and "has byte less than"
// tests are exact as booleans.
func special(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((q-ones)&^q|(s-ones)&^s|(x-ones*0x20)&^x)&highs != 0
}

// scanString returns the index of the closing quote of a string whose
// contents start at i, or -1 if it is unterminated or contains an escape or
// a control character.
func scanString(b []byte, i int) int {
	for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	if i < len(b) && b[i] == '"' {
		return i
	}
	return -1
}

// number is a strict JSON number as scanned by scanNumber.
type number struct {
	neg    bool
	isInt  bool   // no fraction or exponent
	mant   uint64 // the integer digits, exact when digits < 20
	digits int
}

// scanNumber returns the end of the strict JSON number starting at i
// (-1 if malformed) and what it found.
func scanNumber(b []byte, i int) (int, number) {
	var n number
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	if i >= len(b) {
		return -1, n
	}
	switch c := b[i]; {
	case c == '0':
		i++
		n.digits = 1
	case c >= '1' && c <= '9':
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			n.mant = n.mant*10 + uint64(b[i]-'0')
			i++
		}
		n.digits = i - j
	default:
		return -1, n
	}
	n.isInt = true
	if i < len(b) && b[i] == '.' {
		n.isInt = false
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return -1, n
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		n.isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return -1, n
		}
	}
	return i, n
}

// uintOf returns the value of an integer n without sign; s is its text.
func uintOf(n number, s []byte) (uint64, bool) {
	if n.digits < 20 { // at most 19 digits cannot overflow uint64
		return n.mant, true
	}
	if n.neg {
		s = s[1:]
	}
	u, err := strconv.ParseUint(string(s), 10, 64)
	return u, err == nil
}

// intOf returns the value of an integer n as an int64; s is its text.
func intOf(n number, s []byte) (int64, bool) {
	u, ok := uintOf(n, s)
	if !ok {
		return 0, false
	}
	if n.neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// parseFast decodes payload into *f if it has the common shape; see above.
// On false, *f may hold partial results and must be discarded.
func (p *Parser) parseFast(b []byte, f *Frame) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		e := scanString(b, i+1)
		if e < 0 {
			return false
		}
		key := fieldOf(b[i+1 : e])
		i = skipSpace(b, e+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i = p.fastValue(b, i, key, f); i < 0 {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// fastValue decodes the value at b[i] for key into f and returns the index
// after it, or -1 to hand over to the general path.
func (p *Parser) fastValue(b []byte, i int, key field, f *Frame) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		e := scanString(b, i+1)
		if e < 0 {
			return -1
		}
		s := b[i+1 : e]
		switch key {
		case fUnknown:
		case fComponentID:
			if string(s) != p.lastID || p.lastID == "" {
				p.lastID = toString(s)
			}
			f.ComponentID = p.lastID
		case fStatus:
			f.Status = internStatus(s)
		case fPhase:
			f.Phase = internPhase(s)
		case fCurrentJob:
			f.CurrentJob = toString(s)
		default:
			return -1
		}
		return e + 1
	case c == '-' || c >= '0' && c <= '9':
		e, num := scanNumber(b, i)
		if e < 0 {
			return -1
		}
		s := b[i:e]
		var dst *int64
		switch key {
		case fUnknown:
			return e
		case fAvgProcessingMs:
			x, err := strconv.ParseFloat(string(s), 64)
			if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
				return -1
			}
			f.AvgProcessingMs = x
			return e
		case fSeq:
			if !num.isInt || num.neg {
				return -1
			}
			n, ok := uintOf(num, s)
			if !ok {
				return -1
			}
			f.Seq = n
			return e
		case fPID:
			if !num.isInt {
				return -1
			}
			n, ok := intOf(num, s)
			if !ok || int64(int(n)) != n {
				return -1
			}
			f.PID = int(n)
			return e
		case fProgress:
			dst = &f.Progress
		case fFilesProcessed:
			dst = &f.FilesProcessed
		case fErrors:
			dst = &f.Errors
		case fConsecutiveErrors:
			dst = &f.ConsecutiveErrors
		case fDiscoveryAttempts:
			dst = &f.DiscoveryAttempts
		case fClaimConflicts:
			dst = &f.ClaimConflicts
		default:
			return -1
		}
		if !num.isInt {
			return -1
		}
		n, ok := intOf(num, s)
		if !ok {
			return -1
		}
		*dst = n
		return e
	case c == 't' || c == 'f':
		v := c == 't'
		lit := "false"
		if v {
			lit = "true"
		}
		if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
			return -1
		}
		switch key {
		case fUnknown:
		case fCacheLoaded:
			f.CacheLoaded = v
		default:
			return -1
		}
		return i + len(lit)
	case c == 'n':
		// null: every field treats it as absent.
		if len(b)-i < 4 || string(b[i:i+4]) != "null" {
			return -1
		}
		return i + 4
	}
	return -1
}
