package frame

import (
	"fmt"

	"github.com/valyala/fastjson"
)

// maxDepth is the deepest nesting of objects and arrays accepted in a
// payload: fastjson's limit, so a payload that passes validateJSON never
// fails fastjson's depth check.
const maxDepth = fastjson.MaxDepth

// validateJSON returns nil if b is exactly one strict RFC 8259 JSON value,
// with optional whitespace around tokens, nested at most maxDepth deep, and
// otherwise an ErrBadJSON error naming the offset. Like encoding/json.Valid
// it does not check that strings are valid UTF-8.
//
// It runs in linear time and constant memory and does not allocate on
// success: fastjson.Validate is recursive without a depth limit and builds
// its error message level by level, which makes deeply nested garbage cost
// quadratic time, and it misses some raw control characters in strings.
func validateJSON(b []byte) error {
	var objects [maxDepth/64 + 1]uint64 // bit d set: level d is an object
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value is expected at b[i].
		if i >= len(b) {
			return syntaxError("unexpected end", i)
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return syntaxError(fmt.Sprintf("nested deeper than %d", maxDepth), i)
			}
			obj := c == '{'
			if obj {
				objects[depth/64] |= 1 << (depth % 64)
			} else {
				objects[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && (obj && b[i] == '}' || !obj && b[i] == ']') {
				depth--
				i++
				break
			}
			if obj {
				var err error
				if i, err = validateKey(b, i); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			e, _ := scanString(b, i+1)
			if e < 0 {
				return syntaxError("invalid string", i)
			}
			i = e + 1
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return syntaxError("invalid literal", i)
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return syntaxError("invalid literal", i)
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return syntaxError("invalid literal", i)
			}
			i += 4
		default:
			var n number
			e := scanNumber(b, i, &n)
			if e < 0 {
				return syntaxError("invalid value", i)
			}
			i = e
		}
		// A value ended: close containers, or find the next value.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				if i != len(b) {
					return syntaxError("data after the value", i)
				}
				return nil
			}
			if i >= len(b) {
				return syntaxError("unexpected end", i)
			}
			obj := objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			switch c := b[i]; {
			case c == ',':
				i = skipSpace(b, i+1)
				if obj {
					var err error
					if i, err = validateKey(b, i); err != nil {
						return err
					}
				}
			case obj && c == '}' || !obj && c == ']':
				depth--
				i++
				continue
			default:
				return syntaxError("expected ',' or end of container", i)
			}
			break
		}
	}
}

// validateKey checks `"key" :` at b[i] and returns the index after the
// colon and any following whitespace.
func validateKey(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, syntaxError("expected object key", i)
	}
	e, _ := scanString(b, i+1)
	if e < 0 {
		return i, syntaxError("invalid object key", i)
	}
	i = skipSpace(b, e+1)
	if i >= len(b) || b[i] != ':' {
		return i, syntaxError("expected ':'", i)
	}
	return skipSpace(b, i+1), nil
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

func syntaxError(what string, offset int) error {
	return fmt.Errorf("%w: %s at offset %d", ErrBadJSON, what, offset)
}
