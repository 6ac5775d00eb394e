package frame

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var validateSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `[1,2,3]`, `"s"`, `0`, `-0`, `-0.5e+10`, `true`, `false`, `null`,
	`{"a":[{"b":null},[],{}],"c":"\u00e9\"\\"}`, " {\t\"a\"\r\n:\n1 } ", `{"a":1,}`, `[1,]`, `{,}`, `{"a"}`,
	`{"a":}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `01`, `1.`, `.1`, `1e`, `1e+`, `--1`, `+1`, `NaN`, `Infinity`,
	`tru`, `nul`, `[`, `]`, `{`, `}`, `[}`, `{]`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", "\"a\tb\"",
	`{"a":1}{}`, `{"a":1} x`, "\xff", "\"\xff\"", `[[[[]]]]`, `{"a":{"b":{"c":[]}}}`,
}

func FuzzValidate(f *testing.F) {
	for _, s := range validateSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkValidate(t, b)
	})
}

func checkValidate(t *testing.T, b []byte) {
	t.Helper()
	err := validateJSON(b)
	want := json.Valid(b) && jsonDepth(b) <= maxDepth
	if (err == nil) != want {
		t.Fatalf("validateJSON(%q) = %v, json.Valid = %v", b, err, json.Valid(b))
	}
	if err != nil && !errors.Is(err, ErrBadJSON) {
		t.Fatalf("error %v is not ErrBadJSON", err)
	}
}

// jsonDepth returns the deepest nesting of objects and arrays in valid JSON.
func jsonDepth(b []byte) int {
	d, maxD, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			d++
			maxD = max(maxD, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return maxD
}

func TestValidateSeeds(t *testing.T) {
	for _, s := range validateSeeds {
		checkValidate(t, []byte(s))
	}
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		checkValidate(t, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
		checkValidate(t, []byte(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	}
}

// TestDeepNestingIsCheap guards against the quadratic behaviour of
// fastjson.Validate on deeply nested garbage (seconds per 64 KiB line, spent
// building an error message level by level): the general path must reject
// such lines with a short error and a constant number of allocations.
func TestDeepNestingIsCheap(t *testing.T) {
	payloads := []string{
		strings.Repeat("[", MaxLine-len(Prefix)),
		strings.Repeat(`{"a":`, (MaxLine-len(Prefix))/5),
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		`{"component_id":"a","status":"b","x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
	}
	var p Parser
	for _, s := range payloads {
		line := []byte(Prefix + s)
		if _, err := p.Parse(line); err != nil && len(err.Error()) > 300 {
			t.Errorf("error message of %d bytes", len(err.Error()))
		}
		if n := testing.AllocsPerRun(3, func() { _, _ = p.Parse(line) }); n > 32 { // constant, not proportional to depth (the race detector adds a few)
			t.Errorf("Parse of a %d-byte nested line allocates %v times", len(line), n)
		}
	}
	f, err := p.Parse([]byte(Prefix + payloads[3]))
	if err != nil || f.ComponentID != "a" {
		t.Errorf("nesting at the limit: %+v %v", f, err)
	}
}
