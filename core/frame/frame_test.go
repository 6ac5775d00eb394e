package frame_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
)

// mirror is the encoding/json view of a frame, with the documented keys in
// the documented order; it is the reference for Append's output.
type mirror struct {
	ComponentID       string  `json:"component_id"`
	Status            string  `json:"status"`
	Phase             string  `json:"phase,omitempty"`
	CurrentJob        string  `json:"current_job,omitempty"`
	Progress          int64   `json:"progress,omitempty"`
	Seq               uint64  `json:"seq,omitempty"`
	PID               int     `json:"pid,omitempty"`
	FilesProcessed    int64   `json:"files_processed,omitempty"`
	Errors            int64   `json:"errors,omitempty"`
	ConsecutiveErrors int64   `json:"consecutive_errors,omitempty"`
	DiscoveryAttempts int64   `json:"discovery_attempts,omitempty"`
	ClaimConflicts    int64   `json:"claim_conflicts,omitempty"`
	AvgProcessingMs   float64 `json:"avg_processing_ms,omitempty"`
	CacheLoaded       bool    `json:"cache_loaded,omitempty"`
}

func toMirror(f *frame.Frame) mirror {
	return mirror{f.ComponentID, f.Status, string(f.Phase), f.CurrentJob, f.Progress, f.Seq, f.PID,
		f.FilesProcessed, f.Errors, f.ConsecutiveErrors, f.DiscoveryAttempts, f.ClaimConflicts,
		f.AvgProcessingMs, f.CacheLoaded}
}

// reference encodes f with encoding/json (no HTML escaping).
func reference(t testing.TB, f *frame.Frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(frame.Prefix)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(toMirror(f)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func typical() frame.Frame {
	return frame.Frame{
		ComponentID:       "worker:tagger:0",
		Status:            "healthy",
		Phase:             health.Processing,
		CurrentJob:        "job-7f3c2a91:/music/Artist/Album/07 Track.flac",
		Progress:          1234,
		Seq:               98765,
		PID:               41234,
		FilesProcessed:    10523,
		Errors:            3,
		ConsecutiveErrors: 1,
		DiscoveryAttempts: 77,
		ClaimConflicts:    2,
		AvgProcessingMs:   153.27,
		CacheLoaded:       true,
	}
}

var sampleFrames = []frame.Frame{
	{ComponentID: "a", Status: "b"},
	typical(),
	{ComponentID: "w", Status: "pending", Phase: health.Initializing, Seq: math.MaxUint64, Progress: math.MinInt64},
	{ComponentID: "w", Status: "healthy", Phase: "made-up phase", PID: -1, AvgProcessingMs: 1e-7},
	{ComponentID: "w", Status: "ok", AvgProcessingMs: 1e21, Errors: math.MaxInt64},
	{ComponentID: "w", Status: "ok", AvgProcessingMs: -0.000001, CurrentJob: "x"},
	{ComponentID: "w", Status: "ok", AvgProcessingMs: math.SmallestNonzeroFloat64},
	{ComponentID: "w", Status: "ok", AvgProcessingMs: math.MaxFloat64},
	{ComponentID: "ünïcödé 日本語 🎵", Status: "ok", CurrentJob: "\"quoted\" \\back\\slash/ \t\n\r\b\f \x00\x01\x1f\x7f"},
	{ComponentID: "seps\u2028\u2029", Status: "<html>&amp;</html>", Phase: "\u00e9\u0301"},
	{ComponentID: "HEALTH|{\"nested\":\"frame\"}\n", Status: "}", CurrentJob: strings.Repeat("long ", 2000)},
	{ComponentID: "emoji 👍🏽", Status: "x", CurrentJob: "\uFFFD literal replacement char"},
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, f := range sampleFrames {
		got := frame.Append(nil, &f)
		if want := reference(t, &f); !bytes.Equal(got, want) {
			t.Errorf("Append(%+v)\n got %s\nwant %s", f, got, want)
		}
	}
}

func TestAppendGolden(t *testing.T) {
	f := typical()
	got := string(frame.Append(nil, &f))
	want := `HEALTH|{"component_id":"worker:tagger:0","status":"healthy","phase":"processing",` +
		`"current_job":"job-7f3c2a91:/music/Artist/Album/07 Track.flac",` +
		`"progress":1234,"seq":98765,"pid":41234,"files_processed":10523,"errors":3,` +
		`"consecutive_errors":1,"discovery_attempts":77,"claim_conflicts":2,` +
		`"avg_processing_ms":153.27,"cache_loaded":true}` + "\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := string(frame.Append([]byte("x"), &frame.Frame{})); got != `xHEALTH|{"component_id":"","status":""}`+"\n" {
		t.Errorf("zero frame: %q", got)
	}
}

func TestAppendInvalidUTF8AndNonFinite(t *testing.T) {
	f := frame.Frame{ComponentID: "a\xffb\xc3", Status: "\xed\xa0\x80", AvgProcessingMs: math.NaN()}
	got := string(frame.Append(nil, &f))
	want := `HEALTH|{"component_id":"a\ufffdb\ufffd","status":"\ufffd\ufffd\ufffd"}` + "\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// encoding/json agrees on the strings.
	f.AvgProcessingMs = 0
	if ref := string(reference(t, &f)); ref != want {
		t.Errorf("encoding/json %q", ref)
	}
	for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		f := frame.Frame{ComponentID: "a", Status: "b", AvgProcessingMs: v}
		if got := string(frame.Append(nil, &f)); got != `HEALTH|{"component_id":"a","status":"b"}`+"\n" {
			t.Errorf("AvgProcessingMs %v: %q", v, got)
		}
	}
	// Sanitised strings round-trip to the replacement characters.
	g, err := frame.Parse(bytes.TrimSuffix([]byte(want), []byte("\n")))
	if err != nil || g.ComponentID != "a\uFFFDb\uFFFD" || g.Status != "\uFFFD\uFFFD\uFFFD" {
		t.Errorf("Parse: %+v %v", g, err)
	}
}

func TestAppendOneLine(t *testing.T) {
	for _, f := range sampleFrames {
		b := frame.Append(nil, &f)
		if bytes.IndexByte(b, '\n') != len(b)-1 || !bytes.HasPrefix(b, []byte(frame.Prefix)) {
			t.Errorf("not a single line: %q", b)
		}
		if !json.Valid(b[len(frame.Prefix) : len(b)-1]) {
			t.Errorf("invalid JSON: %q", b)
		}
	}
}

func TestAppendNoAlloc(t *testing.T) {
	f := typical()
	f.CurrentJob = "esc \"\\\n\x01 é \xff"
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = frame.Append(buf[:0], &f) }); n != 0 {
		t.Errorf("Append allocates %v times", n)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, f := range sampleFrames {
		line := frame.Append(nil, &f)
		got, err := frame.Parse(line[:len(line)-1])
		if err != nil {
			t.Errorf("Parse(%q): %v", line, err)
			continue
		}
		if got != f {
			t.Errorf("round trip\n got %+v\nwant %+v", got, f)
		}
		// Tolerate CRLF.
		crlf := append(line[:len(line)-1:len(line)-1], '\r')
		if got, err := frame.Parse(crlf); err != nil || got != f {
			t.Errorf("CRLF: %+v %v", got, err)
		}
	}
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var p frame.Parser
	var buf []byte
	for range 20000 {
		f := randomFrame(r)
		buf = frame.Append(buf[:0], &f)
		if want := reference(t, &f); !bytes.Equal(buf, want) {
			t.Fatalf("Append(%+v)\n got %s\nwant %s", f, buf, want)
		}
		got, err := p.Parse(buf[:len(buf)-1])
		if err != nil || got != f {
			t.Fatalf("round trip of %q: %+v, %v", buf, got, err)
		}
	}
}

var alphabet = []string{"a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
	"é", "日", "🎵", "\u2028", "\u2029", "\uFFFD", "<", ">", "&", "|", "{", "}", ":", ","}

func randomString(r *rand.Rand, nonEmpty bool) string {
	n := r.IntN(12)
	if nonEmpty && n == 0 {
		n = 1
	}
	var sb strings.Builder
	for range n {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return int64(r.Uint64())
	default:
		return r.Int64N(100000)
	}
}

func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return math.Float64frombits(r.Uint64() &^ (0x7ff << 52)) // finite, includes subnormals
	case 2:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
	default:
		return float64(r.IntN(100000)) / 100
	}
}

func randomFrame(r *rand.Rand) frame.Frame {
	phases := []health.Phase{"", health.Idle, health.Processing, health.BackingOff, "weird"}
	f := frame.Frame{
		ComponentID:       randomString(r, true),
		Status:            randomString(r, true),
		Phase:             phases[r.IntN(len(phases))],
		CurrentJob:        randomString(r, false),
		Progress:          randomInt(r),
		Seq:               uint64(randomInt(r)),
		PID:               int(randomInt(r)),
		FilesProcessed:    randomInt(r),
		Errors:            randomInt(r),
		ConsecutiveErrors: randomInt(r),
		DiscoveryAttempts: randomInt(r),
		ClaimConflicts:    randomInt(r),
		AvgProcessingMs:   randomFloat(r),
		CacheLoaded:       r.IntN(2) == 0,
	}
	if f.AvgProcessingMs == 0 {
		f.AvgProcessingMs = 0 // normalise -0
	}
	return f
}

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		line string
		want frame.Frame
	}{
		{`HEALTH|{"component_id":"a","status":"b"}`, frame.Frame{ComponentID: "a", Status: "b"}},
		{"HEALTH| \t{ \"status\" : \"b\" , \"component_id\":\"a\" } \r", frame.Frame{ComponentID: "a", Status: "b"}},
		{`HEALTH|{"component_id":"a","status":"b","unknown":{"x":[1,2,{"y":null}]},"more":-1.5e10}`,
			frame.Frame{ComponentID: "a", Status: "b"}},
		{`HEALTH|{"component_id":"a","status":"b","phase":null,"seq":null,"cache_loaded":null,"avg_processing_ms":null,"errors":null}`,
			frame.Frame{ComponentID: "a", Status: "b"}},
		{`HEALTH|{"component_id":"a","component_id":"c","status":"b"}`, frame.Frame{ComponentID: "c", Status: "b"}},
		{`HEALTH|{"compon\u0065nt_id":"\u00e9\ud83c\udfb5","status":"\/"}`, frame.Frame{ComponentID: "é🎵", Status: "/"}},
		{`HEALTH|{"component_id":"a","status":"b","avg_processing_ms":1E2,"progress":-7,"cache_loaded":false}`,
			frame.Frame{ComponentID: "a", Status: "b", AvgProcessingMs: 100, Progress: -7}},
		{"HEALTH|{\"component_id\":\"a\xff\",\"status\":\"b\"}", frame.Frame{ComponentID: "a\uFFFD", Status: "b"}},
		{`HEALTH|{"component_id":"\ud800","status":"\ud83c\udfb5\udfb5\ud83cx\ud83c\u0041"}`,
			frame.Frame{ComponentID: "\uFFFD", Status: "🎵\uFFFD\uFFFDx\uFFFDA"}},
		{`HEALTH|{"nested":{"a":[1]},"component_id":"\ud800","status":"\ud83c\udfb5\udfb5\ud83cx\ud83c\u0041"}`,
			frame.Frame{ComponentID: "\uFFFD", Status: "🎵\uFFFD\uFFFDx\uFFFDA"}},
		{`HEALTH|{"component_id":"\"\\\/\b\f\n\r\t\u0000\u001F\u00e9","status":"b","phase":"\u0069dle"}`,
			frame.Frame{ComponentID: "\"\\/\b\f\n\r\t\x00\x1f\u00e9", Status: "b", Phase: health.Idle}},
		{`HEALTH|{"x":[],"component_id":"\"\\\/\b\f\n\r\t\u0000\u001F\u00e9","status":"b","phase":"\u0069dle"}`,
			frame.Frame{ComponentID: "\"\\/\b\f\n\r\t\x00\x1f\u00e9", Status: "b", Phase: health.Idle}},
		{`HEALTH|{"component_id":"a","status":"b","seq":18446744073709551615,"pid":9223372036854775807}`,
			frame.Frame{ComponentID: "a", Status: "b", Seq: math.MaxUint64, PID: math.MaxInt64}},
	}
	for _, c := range cases {
		got, err := frame.Parse([]byte(c.line))
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.line, got, err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	ok := `{"component_id":"a","status":"b"}`
	long := frame.Prefix + `{"component_id":"a","status":"b","pad":"` + strings.Repeat("x", frame.MaxLine) + `"}`
	cases := []struct {
		line string
		want error
	}{
		{long, frame.ErrTooLong},
		{long[:frame.MaxLine+1], frame.ErrTooLong},
		{"", frame.ErrNoPrefix},
		{"\r", frame.ErrNoPrefix},
		{ok, frame.ErrNoPrefix},
		{"health|" + ok, frame.ErrNoPrefix},
		{" HEALTH|" + ok, frame.ErrNoPrefix},
		{"HEALTH" + ok, frame.ErrNoPrefix},
		{"HEALTH|", frame.ErrBadJSON},
		{"HEALTH|   ", frame.ErrBadJSON},
		{"HEALTH|" + ok + ok, frame.ErrBadJSON},
		{"HEALTH|" + ok + ",", frame.ErrBadJSON},
		{"HEALTH|" + ok[:len(ok)-1], frame.ErrBadJSON},
		{`HEALTH|[` + ok + `]`, frame.ErrBadJSON},
		{`HEALTH|"str"`, frame.ErrBadJSON},
		{`HEALTH|null`, frame.ErrBadJSON},
		{`HEALTH|42`, frame.ErrBadJSON},
		{`HEALTH|{'component_id':'a','status':'b'}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b",}`, frame.ErrBadJSON},
		{`HEALTH|{component_id:"a","status":"b"}`, frame.ErrBadJSON},
		{"HEALTH|{\"component_id\":\"a\tb\",\"status\":\"b\"}", frame.ErrBadJSON}, // raw control char
		{`HEALTH|{"component_id":"a\x","status":"b"}`, frame.ErrBadJSON},          // bad escape
		{`HEALTH|{"component_id":"a","status":"b","x":01}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","x":1.}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","x":-}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","x":NaN}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","x":inf}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","x":tru}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":1,"status":"b"}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":true}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","phase":{}}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","current_job":[]}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","progress":"1"}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","progress":1.5}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","progress":1e3}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","errors":9223372036854775808}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","seq":-1}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","seq":18446744073709551616}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","pid":true}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","avg_processing_ms":"1"}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","avg_processing_ms":1e999}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","cache_loaded":1}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","files_processed":false}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","consecutive_errors":{}}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","discovery_attempts":[]}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","claim_conflicts":"x"}`, frame.ErrBadJSON},
		{`HEALTH|{"component_id":"a","status":"b","x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, frame.ErrBadJSON},
		{`HEALTH|{}`, frame.ErrMissingField},
		{`HEALTH|{"status":"b"}`, frame.ErrMissingField},
		{`HEALTH|{"component_id":"a"}`, frame.ErrMissingField},
		{`HEALTH|{"component_id":"","status":"b"}`, frame.ErrMissingField},
		{`HEALTH|{"component_id":"a","status":""}`, frame.ErrMissingField},
		{`HEALTH|{"component_id":null,"status":"b"}`, frame.ErrMissingField},
		{`HEALTH|{"Component_ID":"a","status":"b"}`, frame.ErrMissingField},
	}
	all := []error{frame.ErrTooLong, frame.ErrNoPrefix, frame.ErrBadJSON, frame.ErrMissingField}
	for _, c := range cases {
		got, err := frame.Parse([]byte(c.line))
		if !errors.Is(err, c.want) {
			t.Errorf("Parse(%.80q) = %v, want %v", c.line, err, c.want)
			continue
		}
		for _, other := range all {
			if other != c.want && errors.Is(err, other) {
				t.Errorf("Parse(%.80q) = %v, also matches %v", c.line, err, other)
			}
		}
		if got != (frame.Frame{}) {
			t.Errorf("Parse(%.80q) returned non-zero frame %+v with error", c.line, got)
		}
	}
}

func TestParseMaxLineBoundary(t *testing.T) {
	head := frame.Prefix + `{"component_id":"a","status":"b","pad":"`
	line := head + strings.Repeat("x", frame.MaxLine-len(head)-2) + `"}`
	if len(line) != frame.MaxLine {
		t.Fatal(len(line))
	}
	if _, err := frame.Parse([]byte(line)); err != nil {
		t.Errorf("line of exactly MaxLine: %v", err)
	}
	if _, err := frame.Parse([]byte(line + "\r")); !errors.Is(err, frame.ErrTooLong) {
		t.Errorf("MaxLine+1 with CR: %v", err)
	}
}

func TestParseDoesNotRetainInput(t *testing.T) {
	var p frame.Parser
	line := []byte(`HEALTH|{"component_id":"abc","status":"xyz","phase":"odd","current_job":"job"}`)
	f, err := p.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'Q'
	}
	if _, err := p.Parse([]byte(`HEALTH|{"component_id":"zzz","status":"www","phase":"qqq","current_job":"rrr"}`)); err != nil {
		t.Fatal(err)
	}
	if f.ComponentID != "abc" || f.Status != "xyz" || f.Phase != "odd" || f.CurrentJob != "job" {
		t.Errorf("frame changed after input reuse: %+v", f)
	}
}

func TestParseAllocs(t *testing.T) {
	f := typical()
	f.CurrentJob = ""
	line := frame.Append(nil, &f)
	line = line[:len(line)-1]
	var p frame.Parser
	if _, err := p.Parse(line); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _ = p.Parse(line) }); n != 0 {
		t.Errorf("Parser.Parse of a repeated frame allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _ = frame.Parse(line) }); n > 1 {
		t.Errorf("Parse of a repeated frame allocates %v times", n)
	}
}

func TestParseNeverPanicsOnMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := frame.Append(nil, &sampleFrames[1])
	base = base[:len(base)-1]
	var p frame.Parser
	const junk = "{}[]\":,\\0-eE.\xff"
	for range 50000 {
		b := append([]byte(nil), base...)
		for range 1 + r.IntN(4) {
			switch i := r.IntN(len(b)); r.IntN(3) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{junk[r.IntN(len(junk))]}, b[i:]...)...)
			}
			if len(b) == 0 {
				break
			}
		}
		f, err := p.Parse(b)
		if err != nil {
			continue
		}
		if !utf8.ValidString(f.ComponentID) || !utf8.ValidString(f.Status) ||
			!utf8.ValidString(string(f.Phase)) || !utf8.ValidString(f.CurrentJob) {
			t.Fatalf("invalid UTF-8 from %q: %+v", b, f)
		}
		if !json.Valid(b[len(frame.Prefix):]) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		again := frame.Append(nil, &f)
		if g, err := p.Parse(again[:len(again)-1]); err != nil || g != f {
			t.Fatalf("re-encode of %q: %+v %v", b, g, err)
		}
	}
}
