package fuzzframe

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
)

var sentinels = []error{frame.ErrTooLong, frame.ErrNoPrefix, frame.ErrBadJSON, frame.ErrMissingField}

// class returns the single sentinel err matches, or nil for nil; it fails
// the test if err matches none or several.
func class(t *testing.T, err error) error {
	t.Helper()
	if err == nil {
		return nil
	}
	var found error
	for _, s := range sentinels {
		if errors.Is(err, s) {
			if found != nil {
				t.Fatalf("error %v matches both %v and %v", err, found, s)
			}
			found = s
		}
	}
	if found == nil {
		t.Fatalf("error %v matches no sentinel", err)
	}
	return found
}

// reference decodes line with encoding/json, following the rules documented
// on frame.Parser.Parse. It returns the frame or the expected error class.
func reference(line []byte) (frame.Frame, error) {
	var f frame.Frame
	if len(line) > frame.MaxLine {
		return f, frame.ErrTooLong
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	payload, ok := bytes.CutPrefix(line, []byte(frame.Prefix))
	if !ok {
		return f, frame.ErrNoPrefix
	}
	if !json.Valid(payload) || bytes.TrimLeft(payload, " \t\r\n")[0] != '{' {
		return f, frame.ErrBadJSON
	}
	// Walk the members in order: like encoding/json decoding into a struct,
	// every occurrence of a duplicate key is type-checked and the last wins.
	dec := json.NewDecoder(bytes.NewReader(payload))
	if _, err := dec.Token(); err != nil { // '{'
		return f, frame.ErrBadJSON
	}
	str := func(raw json.RawMessage, dst *string) bool {
		return raw[0] == '"' && json.Unmarshal(raw, dst) == nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return frame.Frame{}, frame.ErrBadJSON
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return frame.Frame{}, frame.ErrBadJSON
		}
		if string(raw) == "null" {
			continue
		}
		var ok bool
		switch key {
		case "component_id":
			ok = str(raw, &f.ComponentID)
		case "status":
			ok = str(raw, &f.Status)
		case "phase":
			var s string
			ok = str(raw, &s)
			f.Phase = health.Phase(s)
		case "current_job":
			ok = str(raw, &f.CurrentJob)
		case "progress":
			ok = json.Unmarshal(raw, &f.Progress) == nil
		case "seq":
			ok = json.Unmarshal(raw, &f.Seq) == nil
		case "pid":
			ok = json.Unmarshal(raw, &f.PID) == nil
		case "files_processed":
			ok = json.Unmarshal(raw, &f.FilesProcessed) == nil
		case "errors":
			ok = json.Unmarshal(raw, &f.Errors) == nil
		case "consecutive_errors":
			ok = json.Unmarshal(raw, &f.ConsecutiveErrors) == nil
		case "discovery_attempts":
			ok = json.Unmarshal(raw, &f.DiscoveryAttempts) == nil
		case "claim_conflicts":
			ok = json.Unmarshal(raw, &f.ClaimConflicts) == nil
		case "avg_processing_ms":
			ok = json.Unmarshal(raw, &f.AvgProcessingMs) == nil
		case "cache_loaded":
			ok = json.Unmarshal(raw, &f.CacheLoaded) == nil
		default:
			ok = true
		}
		if !ok {
			return frame.Frame{}, frame.ErrBadJSON
		}
	}
	if f.ComponentID == "" || f.Status == "" {
		return frame.Frame{}, frame.ErrMissingField
	}
	return f, nil
}

// depth returns the deepest nesting of objects and arrays in valid JSON.
func depth(b []byte) int {
	d, maxD, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
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

var parseSeeds = []string{
	`HEALTH|{"component_id":"worker:tagger:0","status":"healthy","phase":"processing","current_job":"job-7f3c2a91:/music/a.flac","progress":1234,"seq":98765,"pid":41234,"files_processed":10523,"errors":3,"consecutive_errors":1,"discovery_attempts":77,"claim_conflicts":2,"avg_processing_ms":153.27,"cache_loaded":true}`,
	`HEALTH|{"component_id":"a","status":"b"}`,
	`HEALTH|{"status":"b"}`,
	`HEALTH|{"component_id":"a","status":""}`,
	`HEALTH|{"component_id":"a",`,
	`{"component_id":"a","status":"b"}`,
	`HEALTH|{"component_id":"a","status":"b","seq":18446744073709551616,"errors":-9223372036854775809,"avg_processing_ms":1e400}`,
	`HEALTH|{"component_id":"é日🎵\u00e9\ud83c\udfb5\ud800","status":"\"\\\/\b\f\n\r\t\u0000"}`,
	`HEALTH|{"component_id":"a","status":"b","extra":{"deep":[1,{"x":[null,true,"s"]}]}}`,
	``,
	"HEALTH|{\"component_id\":\"a\",\"status\":\"b\"}\r",
	`HEALTH|{"component_id":"a","status":"b","phase":null,"component_id":"c"}`,
	`HEALTH|{"component_id":"a","status":"b","progress":1.0,"pid":1e2}`,
	`HEALTH|{"component_id":"a","status":"b","avg_processing_ms":-0.0000001,"cache_loaded":false}`,
	"HEALTH|{\"component_id\":\"a\xff\xc3\",\"status\":\"b\"}",
	"HEALTH| {\t\"component_id\" :\n\"a\" , \"status\":\"b\"}\r",
	`HEALTH|[]`,
	`HEALTH|null`,
	`HEALTH|{"component_id":"a","status":"b","x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	var shared frame.Parser // state carried across inputs must not matter
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		got, err := frame.Parse(line)
		if !bytes.Equal(line, orig) {
			t.Fatal("Parse modified its input")
		}
		cls := class(t, err)
		if got2, err2 := shared.Parse(line); got2 != got || class(t, err2) != cls {
			t.Fatalf("Parser.Parse differs: %+v %v vs %+v %v", got2, err2, got, err)
		}
		if err != nil && got != (frame.Frame{}) {
			t.Fatalf("non-zero frame with error %v", err)
		}

		want, wantCls := reference(orig)
		if cls != wantCls || got != want {
			payload := bytes.TrimPrefix(bytes.TrimSuffix(orig, []byte("\r")), []byte(frame.Prefix))
			// Nesting deeper than 300 is rejected (encoding/json allows 10000).
			deep := cls == frame.ErrBadJSON && depth(payload) > 300
			if !deep {
				t.Fatalf("line %q\n got %+v, %v\nwant %+v, %v", orig, got, err, want, wantCls)
			}
		}
		if err != nil {
			return
		}

		for _, s := range []string{got.ComponentID, got.Status, string(got.Phase), got.CurrentJob} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in %+v", got)
			}
		}
		if math.IsNaN(got.AvgProcessingMs) || math.IsInf(got.AvgProcessingMs, 0) {
			t.Fatalf("non-finite AvgProcessingMs %v", got.AvgProcessingMs)
		}
		enc := frame.Append(nil, &got)
		if len(enc)-1 > frame.MaxLine {
			return // escaping made it longer than the receiver accepts
		}
		again, err := frame.Parse(enc[:len(enc)-1])
		if err != nil || again != got {
			t.Fatalf("re-encoded %q: %+v, %v; want %+v", enc, again, err, got)
		}
		if enc2 := frame.Append(nil, &again); !bytes.Equal(enc, enc2) {
			t.Fatalf("Append not stable: %q vs %q", enc, enc2)
		}
	})
}

// FuzzAppend builds frames from fuzzed fields and checks the round trip.
func FuzzAppend(f *testing.F) {
	f.Add("worker:0", "healthy", "processing", "job", int64(5), uint64(7), 123, int64(1), int64(2), int64(3), int64(4), int64(5), 1.25, true)
	f.Add("\xff\"\\\n\u2028", "é", "", "\x00", int64(math.MinInt64), uint64(math.MaxUint64), -1, int64(-1), int64(0), int64(0), int64(0), int64(0), math.NaN(), false)
	f.Add("a", "b", "c", "", int64(0), uint64(0), 0, int64(0), int64(0), int64(0), int64(0), int64(0), 1e-300, false)
	f.Fuzz(func(t *testing.T, id, status, phase, job string, progress int64, seq uint64, pid int,
		files, errs, consec, disc, claims int64, ms float64, cache bool) {
		in := frame.Frame{ComponentID: id, Status: status, Phase: health.Phase(phase), CurrentJob: job,
			Progress: progress, Seq: seq, PID: pid, FilesProcessed: files, Errors: errs,
			ConsecutiveErrors: consec, DiscoveryAttempts: disc, ClaimConflicts: claims,
			AvgProcessingMs: ms, CacheLoaded: cache}
		line := frame.Append(nil, &in)
		if bytes.IndexByte(line, '\n') != len(line)-1 || !utf8.Valid(line) {
			t.Fatalf("not one valid UTF-8 line: %q", line)
		}
		if !json.Valid(line[len(frame.Prefix) : len(line)-1]) {
			t.Fatalf("invalid JSON: %q", line)
		}
		if len(line)-1 > frame.MaxLine {
			return
		}
		want := in
		want.ComponentID, want.Status, want.CurrentJob = fix(id), fix(status), fix(job)
		want.Phase = health.Phase(fix(phase))
		if math.IsNaN(ms) || math.IsInf(ms, 0) {
			want.AvgProcessingMs = 0
		}
		got, err := frame.Parse(line[:len(line)-1])
		if want.ComponentID == "" || want.Status == "" {
			if !errors.Is(err, frame.ErrMissingField) {
				t.Fatalf("want ErrMissingField, got %v", err)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", line, got, err, want)
		}
	})
}

// fix replaces each byte of invalid UTF-8 with U+FFFD, as Append does.
func fix(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for an invalid byte
		i += n
	}
	return b.String()
}

const tooLong = "\x00<too long>"

// feed runs s over chunks and returns the events and Pending after each chunk.
func feed(t *testing.T, s *frame.Splitter, chunks ...[]byte) []string {
	var ev []string
	for _, c := range chunks {
		s.Feed(c, func(b []byte) {
			if len(b) > frame.MaxLine || bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("bad line of %d bytes", len(b))
			}
			ev = append(ev, string(b))
		}, func() { ev = append(ev, tooLong) })
		if s.Pending() > frame.MaxLine || s.Cap() > frame.MaxLine {
			t.Fatalf("pending %d cap %d exceed MaxLine", s.Pending(), s.Cap())
		}
	}
	return ev
}

var splitterSeeds = []struct {
	data   string
	split  uint
	repeat uint8
}{
	{"", 0, 0},
	{"HEALTH|{\"component_id\":\"a\",\"status\":\"b\"}\n", 10, 0},
	{"one\ntwo\nthree", 5, 0},
	{"no newline at all", 3, 0},
	{"crlf\r\nline\r\n", 5, 3},
	{"\n\n\n", 1, 0},
	{strings.Repeat("x", 1000), 500, 70},
	{strings.Repeat("y", 1000) + "\n", 999, 80},
	{"HEALTH|{\"component_id\":\"é\",\"status\":\"b\"}\nHEA", 40, 200},
}

func FuzzSplitter(f *testing.F) {
	for _, s := range splitterSeeds {
		f.Add([]byte(s.data), s.split, s.repeat)
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint, repeat uint8) {
		if len(data)*(int(repeat)+1) > 4<<20 {
			return
		}
		stream := bytes.Repeat(data, int(repeat)+1)
		k := int(split % uint(len(stream)+1))

		// Expected events, computed independently.
		var want []string
		parts := bytes.Split(stream, []byte("\n"))
		for _, l := range parts[:len(parts)-1] {
			if len(l) > frame.MaxLine {
				want = append(want, tooLong)
			} else {
				want = append(want, string(l))
			}
		}
		last := parts[len(parts)-1]
		wantPending := len(last)
		if len(last) > frame.MaxLine {
			want = append(want, tooLong)
			wantPending = 0
		}

		var whole, two frame.Splitter
		got := feed(t, &whole, stream)
		if !slices.Equal(got, want) {
			t.Fatalf("whole: %d events, want %d", len(got), len(want))
		}
		got = feed(t, &two, stream[:k], stream[k:])
		if !slices.Equal(got, want) {
			t.Fatalf("split at %d: %d events, want %d", k, len(got), len(want))
		}
		if whole.Pending() != wantPending || two.Pending() != wantPending {
			t.Fatalf("pending %d/%d, want %d", whole.Pending(), two.Pending(), wantPending)
		}
		if len(stream) <= 4096 {
			var bb frame.Splitter
			chunks := make([][]byte, len(stream))
			for i := range stream {
				chunks[i] = stream[i : i+1]
			}
			if got := feed(t, &bb, chunks...); !slices.Equal(got, want) {
				t.Fatal("byte by byte differs")
			}
		}
	})
}
