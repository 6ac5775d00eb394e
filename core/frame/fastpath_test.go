package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// fastSeeds are payloads (prefix excluded) on and around the fast path.
var fastSeeds = []string{
	`{"component_id":"a","status":"b"}`,
	` { "component_id" : "a" , "status" : "b" } `,
	"{\t\"component_id\":\"a\",\r\n\"status\":\"b\"}",
	`{}`,
	`{"component_id":"a","status":"b","phase":"idle","current_job":"j","progress":-9223372036854775808,"seq":18446744073709551615,"pid":-1}`,
	`{"component_id":"a","status":"b","seq":18446744073709551616}`,
	`{"component_id":"a","status":"b","errors":9223372036854775808}`,
	`{"component_id":"a","status":"b","errors":-9223372036854775809}`,
	`{"component_id":"a","status":"b","errors":00}`,
	`{"component_id":"a","status":"b","errors":-0}`,
	`{"component_id":"a","status":"b","seq":-0}`,
	`{"component_id":"a","status":"b","avg_processing_ms":-0.0e-0}`,
	`{"component_id":"a","status":"b","avg_processing_ms":1.7976931348623157e309}`,
	`{"component_id":"a","status":"b","avg_processing_ms":4e-400}`,
	`{"component_id":"a","status":"b","avg_processing_ms":1.}`,
	`{"component_id":"a","status":"b","avg_processing_ms":.5}`,
	`{"component_id":"a","status":"b","cache_loaded":true,"cache_loaded":false}`,
	`{"component_id":"a","status":"b","cache_loaded":null,"phase":null}`,
	`{"component_id":"a","status":"b","x":[1,{"y":"z"}],"u":"\n"}`,
	`{"component_id":"a\"b","status":"b"}`,
	"{\"component_id\":\"a\xff\xfe\",\"status\":\"\xc3\"}",
	`{"component_id":"a","status":"b",}`,
	`{"component_id":"a","status":"b"}x`,
	`{"component_id":"a","status":"b"`,
	`{"component_id":"a" "status":"b"}`,
	`{"component_id":"a","status":tru}`,
	`{"component_id":"a","status":"b","x":nul}`,
	`{"component_id":"a","status":"b","pid":1e2}`,
	`{"component_id":"\ud800\u00e9\"","status":"\ud83c\udfb5","current_job":"\\\/\b","x":"\n"}`,
	`{"compon\u0065nt_id":"a","status":"b"}`,
	`{"component_id":"a","status":"b","phase":"\u0069dle","x":"\q"}`,
}

// FuzzFastPath checks that whenever the fast path accepts a payload, the
// general (fastjson) path accepts it too and decodes the same frame.
func FuzzFastPath(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkFastPath(t, payload)
	})
}

func checkFastPath(t *testing.T, payload []byte) {
	t.Helper()
	var p, q Parser
	var fast Frame
	in := bytes.Clone(payload)
	if !p.parseFast(payload, &fast) {
		return
	}
	if !bytes.Equal(in, payload) {
		t.Fatalf("parseFast modified its input")
	}
	fastF, fastErr := checkRequired(fast)
	slowF, slowErr := q.parseGeneral(payload)
	if fastF != slowF || !errors.Is(slowErr, fastErr) || (fastErr == nil) != (slowErr == nil) {
		t.Fatalf("payload %q\nfast %+v %v\nslow %+v %v", payload, fastF, fastErr, slowF, slowErr)
	}
}

func TestFastPathSeeds(t *testing.T) {
	for _, s := range fastSeeds {
		checkFastPath(t, []byte(s))
	}
}

func TestFastPathCoversAppend(t *testing.T) {
	f := Frame{ComponentID: "w", Status: "ok", Phase: "idle", CurrentJob: "é/日", Progress: -3, Seq: 1, PID: 2,
		FilesProcessed: 4, Errors: 5, ConsecutiveErrors: 6, DiscoveryAttempts: 7, ClaimConflicts: 8,
		AvgProcessingMs: 9.25, CacheLoaded: true}
	line := Append(nil, &f)
	var p Parser
	var got Frame
	if !p.parseFast(line[len(Prefix):len(line)-1], &got) || got != f {
		t.Errorf("fast path does not handle Append output: %+v", got)
	}
}

func TestSpecial(t *testing.T) {
	for i := range 256 {
		for pos := range 8 {
			b := bytes.Repeat([]byte{'a'}, 8)
			b[pos] = byte(i)
			got := special(binary.LittleEndian.Uint64(b))
			if want := i < 0x20 || i == '"' || i == '\\'; got != want {
				t.Fatalf("special(byte %#x at %d) = %v", i, pos, got)
			}
		}
	}
}

// BenchmarkParseGeneral measures the fastjson path alone, for comparison.
func BenchmarkParseGeneral(b *testing.B) {
	f := Frame{ComponentID: "worker:tagger:0", Status: "healthy", Phase: "processing",
		CurrentJob: "job-7f3c2a91:/music/Artist/Album/07 Track.flac", Progress: 1234, Seq: 98765, PID: 41234,
		FilesProcessed: 10523, Errors: 3, ConsecutiveErrors: 1, DiscoveryAttempts: 77, ClaimConflicts: 2,
		AvgProcessingMs: 153.27, CacheLoaded: true}
	line := Append(nil, &f)
	payload := line[len(Prefix) : len(line)-1]
	var p Parser
	b.SetBytes(int64(len(line) - 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.parseGeneral(payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// TestFloatOfMatchesParseFloat checks the exact shortcut bit for bit.
func TestFloatOfMatchesParseFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(s string) {
		t.Helper()
		var n number
		e := scanNumber([]byte(s), 0, &n)
		if e != len(s) {
			t.Fatalf("scanNumber(%q) = %d", s, e)
		}
		got, ok := floatOf(&n, []byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if ok != (err == nil) || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("floatOf(%q) = %v %v, ParseFloat = %v %v", s, got, ok, want, err)
		}
	}
	for _, s := range []string{"0", "-0", "0.0", "-0.0", "1", "0.1", "0.3", "153.27", "999999999999999",
		"99999999999999.9", "9007199254740993", "0.000000000000001", "123456789012345.6", "1e3", "1.5E-7",
		"1e400", "-1e400", "4e-400", "0.1234567890123456789"} {
		check(s)
	}
	for range 200000 {
		intDigits, fracDigits := r.IntN(16), r.IntN(16)
		var b []byte
		if r.IntN(2) == 0 {
			b = append(b, '-')
		}
		if intDigits == 0 {
			b = append(b, '0')
		} else {
			b = append(b, byte('1'+r.IntN(9)))
			for range intDigits - 1 {
				b = append(b, byte('0'+r.IntN(10)))
			}
		}
		if fracDigits > 0 {
			b = append(b, '.')
			for range fracDigits {
				b = append(b, byte('0'+r.IntN(10)))
			}
		}
		check(string(b))
	}
	// Append's output reads back exactly through the shortcut.
	for range 100000 {
		x := r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-4))
		b := appendFloat(nil, x)
		var n number
		e := scanNumber(b, 0, &n)
		if got, ok := floatOf(&n, b[:e]); !ok || got != x {
			t.Fatalf("%v -> %s -> %v", x, b, got)
		}
	}
}
