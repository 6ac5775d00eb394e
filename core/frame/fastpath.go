package frame

import (
	"encoding/binary"
	"math"
	"strconv"
)

// The fast path decodes, in a single strict pass without fastjson, a payload
// that is one flat JSON object: keys without escapes, values that are
// strings, numbers, true, false or null. That covers everything Append
// writes, in any key order and with any whitespace. It reports false for
// anything else — nested values, escaped keys, a known field of the wrong
// type, out-of-range numbers, any syntax error — and the general path then
// decides, including every error. Whenever the fast path succeeds its result
// is the one the general path gives (FuzzFastPath checks this).

// field identifies a known key. The order is Append's key order.
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

// keyText is each known key as Append writes it, quoted and with its colon.
var keyText = [...]string{
	fComponentID:       `"component_id":`,
	fStatus:            `"status":`,
	fPhase:             `"phase":`,
	fCurrentJob:        `"current_job":`,
	fProgress:          `"progress":`,
	fSeq:               `"seq":`,
	fPID:               `"pid":`,
	fFilesProcessed:    `"files_processed":`,
	fErrors:            `"errors":`,
	fConsecutiveErrors: `"consecutive_errors":`,
	fDiscoveryAttempts: `"discovery_attempts":`,
	fClaimConflicts:    `"claim_conflicts":`,
	fAvgProcessingMs:   `"avg_processing_ms":`,
	fCacheLoaded:       `"cache_loaded":`,
}

// keyName returns the JSON key of a known field.
func keyName(k field) string {
	t := keyText[k]
	return t[1 : len(t)-2]
}

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
// contents start at i, and whether the contents have escapes. It returns
// -1 if the string is unterminated or has a control character or a
// malformed escape.
func scanString(b []byte, i int) (end int, escaped bool) {
	for {
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1, false
		}
		switch b[i] {
		case '"':
			return i, escaped
		case '\\':
			n := escapeLen(b[i:])
			if n == 0 {
				return -1, false
			}
			escaped = true
			i += n
		default:
			return -1, false
		}
	}
}

// number is a strict JSON number as scanned by scanNumber.
type number struct {
	neg    bool
	isInt  bool   // no fraction or exponent
	hasExp bool   // has an exponent part
	mant   uint64 // the integer and fraction digits; exact while digits+frac < 20
	digits int    // number of integer digits
	frac   int    // number of fraction digits
}

// scanNumber returns the end of the strict JSON number starting at i
// (-1 if malformed) and stores what it found in *n, which must be zero.
// (A pointer rather than a returned struct: copying the struct out costs
// more than the scan.)
func scanNumber(b []byte, i int, n *number) int {
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	if i >= len(b) {
		return -1
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
		return -1
	}
	n.isInt = true
	if i < len(b) && b[i] == '.' {
		n.isInt = false
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			n.mant = n.mant*10 + uint64(b[i]-'0')
			i++
		}
		if i == j {
			return -1
		}
		n.frac = i - j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		n.isInt = false
		n.hasExp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return -1
		}
	}
	return i
}

// pow10 holds the powers of ten that are exact in a float64.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// floatOf returns the value of n as strconv.ParseFloat would, using s, its
// text, only when the exact shortcut does not apply. With at most 15
// significant digits and no exponent the digits and the power of ten are
// exact float64 values and one division rounds correctly (Clinger's fast
// path), so the result is bit-for-bit the one ParseFloat returns.
func floatOf(n *number, s []byte) (float64, bool) {
	if !n.hasExp && n.digits+n.frac <= 15 {
		x := float64(n.mant) / pow10[n.frac]
		if n.neg {
			x = -x
		}
		return x, true
	}
	x, err := strconv.ParseFloat(string(s), 64)
	return x, err == nil && !math.IsInf(x, 0) && !math.IsNaN(x)
}

// uintOf returns the magnitude of an integer n; s is its text.
func uintOf(n *number, s []byte) (uint64, bool) {
	if n.digits < 20 { // at most 19 digits cannot overflow uint64
		return n.mant, true // for an integer, mant holds only its digits
	}
	if n.neg {
		s = s[1:]
	}
	u, err := strconv.ParseUint(string(s), 10, 64)
	return u, err == nil
}

// intOf returns the value of an integer n as an int64; s is its text.
func intOf(n *number, s []byte) (int64, bool) {
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
	next := fComponentID // the key Append would write next
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		// Keys usually come in Append's order: try the expected ones first.
		key := fUnknown
		for k := next; k <= fCacheLoaded; k++ {
			if kt := keyText[k]; len(b)-i >= len(kt) && string(b[i:i+len(kt)]) == kt {
				key, next = k, k+1
				i += len(kt)
				break
			}
		}
		if key == fUnknown {
			e, esc := scanString(b, i+1)
			if e < 0 || esc {
				return false
			}
			key = fieldOf(b[i+1 : e])
			i = skipSpace(b, e+1)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i++
		}
		i = skipSpace(b, i)
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
		e, esc := scanString(b, i+1)
		if e < 0 {
			return -1
		}
		switch key {
		case fUnknown:
			return e + 1
		case fComponentID, fStatus, fPhase, fCurrentJob:
		default:
			return -1
		}
		s := b[i+1 : e]
		if esc {
			var ok bool
			if p.str, ok = appendUnescaped(p.str[:0], s); !ok {
				return -1
			}
			s = p.str
		}
		p.setString(f, key, s)
		return e + 1
	case c == '-' || c >= '0' && c <= '9':
		var num number
		e := scanNumber(b, i, &num)
		if e < 0 {
			return -1
		}
		s := b[i:e]
		switch key {
		case fUnknown:
			return e
		case fAvgProcessingMs:
			x, ok := floatOf(&num, s)
			if !ok {
				return -1
			}
			f.AvgProcessingMs = x
			return e
		case fSeq:
			if !num.isInt || num.neg {
				return -1
			}
			n, ok := uintOf(&num, s)
			if !ok {
				return -1
			}
			f.Seq = n
			return e
		case fPID:
			if !num.isInt {
				return -1
			}
			n, ok := intOf(&num, s)
			if !ok || int64(int(n)) != n {
				return -1
			}
			f.PID = int(n)
			return e
		}
		dst := f.counter(key)
		if dst == nil || !num.isInt {
			return -1
		}
		n, ok := intOf(&num, s)
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
