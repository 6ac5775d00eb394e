package frame

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/nomarr/nomarr/core/health"
)

// Parser decodes frame lines, reusing its JSON parser and buffers between
// calls. The zero value is ready to use. A Parser must not be used by more
// than one goroutine at a time; an owner keeps one per worker pipe.
//
// Memory held by a Parser is bounded by the longest line it accepted
// (at most MaxLine plus the parser's per-value bookkeeping).
type Parser struct {
	p fastjson.Parser
	// lastID is the previously decoded component_id; an equal one is reused
	// instead of allocating a new string (one pipe carries one worker).
	lastID string
	// num is scratch space for the text of a number.
	num []byte
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
// trailing '\r' is tolerated. Parse never panics and does not retain line.
//
// Errors, checked in this order (test with errors.Is):
//   - ErrTooLong: len(line) > MaxLine (the '\r' included).
//   - ErrNoPrefix: line does not start with Prefix.
//   - ErrBadJSON: the payload is not exactly one valid JSON object (RFC 8259
//     syntax; surrounding whitespace allowed), a known field has the wrong
//     type (strings for component_id, status, phase, current_job; integers
//     in range for the counters, seq and pid; a finite number for
//     avg_processing_ms; a boolean for cache_loaded), or nesting is deeper
//     than fastjson's limit. The wrapped message says what was wrong.
//   - ErrMissingField: component_id or status is absent, null or empty.
//
// Unknown fields are ignored. A known field set to null counts as absent.
// When a key appears more than once, the last occurrence wins. Invalid UTF-8
// in decoded strings is replaced by U+FFFD per byte, as encoding/json does,
// so every returned string is valid UTF-8 and Parse(Append(f)) == f for any
// f whose strings are valid UTF-8 and whose AvgProcessingMs is finite.
// Phase is returned as sent; it is not checked against the defined phases.
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

// parseGeneral decodes any payload with fastjson after strict validation.
func (p *Parser) parseGeneral(payload []byte) (Frame, error) {
	if err := validate(payload); err != nil {
		return Frame{}, err
	}
	v, err := p.p.ParseBytes(payload)
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrBadJSON, err)
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

// validate reports an ErrBadJSON error unless payload is strict JSON.
//
// fastjson's parser is lenient (about numbers, escapes, control characters),
// so the payload is validated first. fastjson.Validate is strict except that
// it misses raw control characters in a string before its last escape; a
// payload containing any byte below 0x20 (never produced by Append, but legal
// as whitespace between tokens) is therefore judged by encoding/json instead.
func validate(payload []byte) error {
	if hasControl(payload) {
		if !json.Valid(payload) {
			return errControlChar
		}
		return nil
	}
	if err := fastjson.ValidateBytes(payload); err != nil {
		return fmt.Errorf("%w: %v", ErrBadJSON, err)
	}
	return nil
}

var errControlChar = fmt.Errorf("%w: invalid JSON with control characters", ErrBadJSON)

// hasControl reports whether b has a byte below 0x20, eight bytes at a time.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-ones*0x20)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// field stores one known key of the payload into f; unknown keys are ignored.
func (p *Parser) field(f *Frame, key []byte, v *fastjson.Value) error {
	var dst *int64
	switch string(key) {
	case "component_id":
		b, err := stringField("component_id", v)
		if err != nil || b == nil {
			return err
		}
		if string(b) != p.lastID || p.lastID == "" {
			p.lastID = toString(b)
		}
		f.ComponentID = p.lastID
		return nil
	case "status":
		b, err := stringField("status", v)
		if err != nil || b == nil {
			return err
		}
		f.Status = internStatus(b)
		return nil
	case "phase":
		b, err := stringField("phase", v)
		if err != nil || b == nil {
			return err
		}
		f.Phase = internPhase(b)
		return nil
	case "current_job":
		b, err := stringField("current_job", v)
		if err != nil || b == nil {
			return err
		}
		f.CurrentJob = toString(b)
		return nil
	case "seq":
		if v.Type() == fastjson.TypeNull {
			return nil
		}
		n, err := v.Uint64()
		if err != nil {
			return typeError("seq", err)
		}
		f.Seq = n
		return nil
	case "pid":
		if v.Type() == fastjson.TypeNull {
			return nil
		}
		n, err := v.Int()
		if err != nil {
			return typeError("pid", err)
		}
		f.PID = n
		return nil
	case "avg_processing_ms":
		if v.Type() == fastjson.TypeNull {
			return nil
		}
		if v.Type() != fastjson.TypeNumber {
			return fmt.Errorf("%w: avg_processing_ms: want number, got %s", ErrBadJSON, v.Type())
		}
		// fastjson's own float parser is not always correctly rounded;
		// strconv is, so Append's shortest form reads back exactly.
		p.num = v.MarshalTo(p.num[:0])
		x, err := strconv.ParseFloat(string(p.num), 64)
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			err = errors.New("not finite")
		}
		if err != nil {
			return typeError("avg_processing_ms", err)
		}
		f.AvgProcessingMs = x
		return nil
	case "cache_loaded":
		if v.Type() == fastjson.TypeNull {
			return nil
		}
		b, err := v.Bool()
		if err != nil {
			return typeError("cache_loaded", err)
		}
		f.CacheLoaded = b
		return nil
	case "progress":
		dst = &f.Progress
	case "files_processed":
		dst = &f.FilesProcessed
	case "errors":
		dst = &f.Errors
	case "consecutive_errors":
		dst = &f.ConsecutiveErrors
	case "discovery_attempts":
		dst = &f.DiscoveryAttempts
	case "claim_conflicts":
		dst = &f.ClaimConflicts
	default:
		return nil
	}
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	n, err := v.Int64()
	if err != nil {
		return typeError(string(key), err)
	}
	*dst = n
	return nil
}

func typeError(name string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrBadJSON, name, err)
}

// stringField returns the unescaped bytes of a string value, nil for null,
// and an ErrBadJSON error for any other type. The bytes alias the parser.
func stringField(name string, v *fastjson.Value) ([]byte, error) {
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case fastjson.TypeNull:
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %s: want string, got %s", ErrBadJSON, name, v.Type())
}

// toString copies b into a new string, replacing each byte of invalid UTF-8
// with U+FFFD.
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
