package frame

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/valyala/fastjson"
)

// Parser decodes frame lines, reusing its buffers between calls. The zero
// value is ready to use. A Parser must not be used by more than one
// goroutine at a time; an owner keeps one per worker pipe.
//
// Decoding has two paths with identical results. The fast path is a strict
// single-pass decoder for the flat objects that Append writes (any key order,
// whitespace, escapes, unknown scalar fields). Everything else (nested
// unknown values, escaped keys, and every malformed payload) goes to the
// general path: strict linear-time validation, then
// github.com/valyala/fastjson. Both take time linear in the line length.
//
// Memory held by a Parser is bounded by the longest line it was given
// (at most MaxLine plus fastjson's per-value bookkeeping).
type Parser struct {
	p fastjson.Parser
	// lastID and lastJob are the previously decoded component_id and
	// current_job; an equal value is reused instead of allocating a new
	// string (one pipe carries one worker, which reports the same job for
	// many frames). They only ever hold valid UTF-8.
	lastID, lastJob string
	// raw and str are scratch space for a value's JSON text and for an
	// unescaped string.
	raw, str []byte
}

var parserPool = sync.Pool{New: func() any { return new(Parser) }}

// Parse decodes one frame line using a pooled Parser. See (*Parser).Parse.
func Parse(line []byte) (Frame, error) {
	p := parserPool.Get().(*Parser)
	f, err := p.Parse(line)
	parserPool.Put(p)
	return f, err
}

var (
	errMissingID     = fmt.Errorf("%w: component_id", ErrMissingField)
	errMissingStatus = fmt.Errorf("%w: status", ErrMissingField)
)

// Parse decodes one frame line. line excludes the trailing '\n'; a single
// trailing '\r' is tolerated. Parse never panics, does not modify line and
// does not retain it.
//
// Errors, checked in this order (test with errors.Is; exactly one matches):
//   - ErrTooLong: len(line) > MaxLine (the '\r' included).
//   - ErrNoPrefix: line does not start with Prefix.
//   - ErrBadJSON: the payload is not exactly one valid JSON object (strict
//     RFC 8259 syntax; whitespace around tokens allowed), a known field has
//     the wrong type (a string for component_id, status, phase and
//     current_job; an integer in range for the counters, seq (unsigned) and
//     pid — 1.0 and 1e3 are not integers; a finite number for
//     avg_processing_ms; a boolean for cache_loaded), or values are nested
//     deeper than fastjson's limit (300). The wrapped message says why.
//   - ErrMissingField: component_id or status is absent, null or "".
//
// Decoding follows encoding/json: unknown fields are ignored, null leaves a
// field at its zero value, the last of duplicate keys wins (keys match
// exactly, case-sensitively), escapes are decoded with an unpaired UTF-16
// surrogate becoming U+FFFD, and each byte of invalid UTF-8 becomes U+FFFD.
// Every returned string is therefore valid UTF-8, and Parse(Append(f)) == f
// for any f with valid UTF-8 strings, non-empty ComponentID and Status, and
// a finite AvgProcessingMs. Phase is returned as sent; it is not checked
// against the defined phases.
func (p *Parser) Parse(line []byte) (Frame, error) {
	if len(line) > MaxLine {
		return Frame{}, ErrTooLong
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) < len(Prefix) || string(line[:len(Prefix)]) != Prefix {
		return Frame{}, ErrNoPrefix
	}
	payload := line[len(Prefix):]
	var f Frame
	if p.parseFast(payload, &f) {
		return checkRequired(f)
	}
	return p.parseGeneral(payload)
}

// checkRequired returns f, or ErrMissingField if a required field is empty.
func checkRequired(f Frame) (Frame, error) {
	if f.ComponentID == "" {
		return Frame{}, errMissingID
	}
	if f.Status == "" {
		return Frame{}, errMissingStatus
	}
	return f, nil
}

// parseGeneral decodes any payload: strict validation, then fastjson.
func (p *Parser) parseGeneral(payload []byte) (Frame, error) {
	// fastjson's parser is lenient (about numbers, escapes and control
	// characters), so the payload is validated strictly first.
	if err := validateJSON(payload); err != nil {
		return Frame{}, err
	}
	v, err := p.p.ParseBytes(payload)
	if err != nil { // not expected after validation
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return Frame{}, fmt.Errorf("%w: %s", ErrBadJSON, msg)
	}
	o, err := v.Object()
	if err != nil {
		return Frame{}, fmt.Errorf("%w: payload is %s, not an object", ErrBadJSON, v.Type())
	}
	var f Frame
	var ferr error
	o.Visit(func(key []byte, v *fastjson.Value) {
		if ferr == nil {
			ferr = p.field(&f, key, v)
		}
	})
	if ferr != nil {
		return Frame{}, ferr
	}
	return checkRequired(f)
}

// field stores one key of a validated payload into f; unknown keys are
// ignored, null values leave f unchanged.
func (p *Parser) field(f *Frame, key []byte, v *fastjson.Value) error {
	k := fieldOf(key)
	switch k {
	case fUnknown:
		return nil
	case fComponentID, fStatus, fPhase, fCurrentJob:
		// The value's own JSON text is decoded here rather than by fastjson,
		// whose unescaping differs from encoding/json (unpaired surrogates).
		// MarshalTo returns a string's source text as long as fastjson has
		// not unescaped it yet (nothing here asks it to); had it, it would
		// return an equivalent re-escaped text.
		p.raw = v.MarshalTo(p.raw[:0])
		raw := p.raw
		if string(raw) == "null" {
			return nil
		}
		if len(raw) < 2 || raw[0] != '"' {
			return fmt.Errorf("%w: %s: want string, got %s", ErrBadJSON, keyName(k), v.Type())
		}
		var ok bool
		p.str, ok = appendUnescaped(p.str[:0], raw[1:len(raw)-1])
		if !ok {
			return fmt.Errorf("%w: %s: malformed string", ErrBadJSON, keyName(k))
		}
		p.setString(f, k, p.str)
		return nil
	}
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	var err error
	switch k {
	case fSeq:
		var n uint64
		if n, err = v.Uint64(); err == nil {
			f.Seq = n
		}
	case fPID:
		var n int
		if n, err = v.Int(); err == nil {
			f.PID = n
		}
	case fAvgProcessingMs:
		if v.Type() != fastjson.TypeNumber {
			err = fmt.Errorf("want number, got %s", v.Type())
			break
		}
		// fastjson's float parser is not always correctly rounded; strconv
		// is, so Append's shortest form reads back exactly.
		p.raw = v.MarshalTo(p.raw[:0])
		var x float64
		if x, err = strconv.ParseFloat(string(p.raw), 64); err == nil {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				err = fmt.Errorf("%s is not finite", p.raw)
			} else {
				f.AvgProcessingMs = x
			}
		}
	case fCacheLoaded:
		var b bool
		if b, err = v.Bool(); err == nil {
			f.CacheLoaded = b
		}
	default:
		var n int64
		if n, err = v.Int64(); err == nil {
			*f.counter(k) = n
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadJSON, keyName(k), err)
	}
	return nil
}

// setString stores the decoded string s of a string field k into f.
func (p *Parser) setString(f *Frame, k field, s []byte) {
	switch k {
	case fComponentID:
		f.ComponentID = reuse(&p.lastID, s)
	case fStatus:
		f.Status = internStatus(s)
	case fPhase:
		f.Phase = internPhase(s)
	case fCurrentJob:
		f.CurrentJob = reuse(&p.lastJob, s)
	}
}

// counter returns the int64 field of f for key k, or nil.
func (f *Frame) counter(k field) *int64 {
	switch k {
	case fProgress:
		return &f.Progress
	case fFilesProcessed:
		return &f.FilesProcessed
	case fErrors:
		return &f.Errors
	case fConsecutiveErrors:
		return &f.ConsecutiveErrors
	case fDiscoveryAttempts:
		return &f.DiscoveryAttempts
	case fClaimConflicts:
		return &f.ClaimConflicts
	}
	return nil
}
