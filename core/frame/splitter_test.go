package frame_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/frame"
)

const tooLongMark = "\x00<too long>"

// collect feeds chunks to s and records lines and tooLong reports in order,
// checking the memory bound after every chunk.
func collect(t testing.TB, s *frame.Splitter, chunks ...[]byte) []string {
	t.Helper()
	var events []string
	line := func(b []byte) {
		if len(b) > frame.MaxLine {
			t.Fatalf("delivered a line of %d bytes", len(b))
		}
		events = append(events, string(b))
	}
	tooLong := func() { events = append(events, tooLongMark) }
	for _, c := range chunks {
		s.Feed(c, line, tooLong)
		if s.Pending() > frame.MaxLine || s.Cap() > frame.MaxLine {
			t.Fatalf("pending %d, cap %d > MaxLine", s.Pending(), s.Cap())
		}
	}
	return events
}

// randomChunks splits b at random points (including empty chunks).
func randomChunks(r *rand.Rand, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		var n int
		switch r.IntN(4) {
		case 0:
			n = r.IntN(3)
		case 1:
			n = r.IntN(64)
		case 2:
			n = r.IntN(4096)
		default:
			n = r.IntN(3 * frame.MaxLine)
		}
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// randomStream builds a stream of lines and the events it must produce.
func randomStream(r *rand.Rand) (stream []byte, want []string) {
	sizes := []int{0, 1, 10, 250, 4095, frame.MaxLine - 1, frame.MaxLine, frame.MaxLine + 1, 2*frame.MaxLine + 3, 200000}
	for i := range 40 {
		n := sizes[r.IntN(len(sizes))]
		if r.IntN(3) == 0 {
			n = r.IntN(300)
		}
		line := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		if n > 0 && r.IntN(2) == 0 {
			line[r.IntN(n)] = '\r'
		}
		stream = append(stream, line...)
		stream = append(stream, '\n')
		if n > frame.MaxLine {
			want = append(want, tooLongMark)
		} else {
			want = append(want, string(line))
		}
	}
	return stream, want
}

func TestSplitterRandomChunking(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 30 {
		stream, want := randomStream(r)
		var whole frame.Splitter
		if got := collect(t, &whole, stream); !slices.Equal(got, want) {
			t.Fatalf("round %d: whole stream gives %d events, want %d", round, len(got), len(want))
		}
		var chunked frame.Splitter
		if got := collect(t, &chunked, randomChunks(r, stream)...); !slices.Equal(got, want) {
			t.Fatalf("round %d: chunked stream differs", round)
		}
		if whole.Pending() != 0 || chunked.Pending() != 0 {
			t.Fatalf("pending after complete lines: %d %d", whole.Pending(), chunked.Pending())
		}
	}
}

func TestSplitterByteByByte(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	stream, want := randomStream(r)
	var s frame.Splitter
	chunks := make([][]byte, len(stream))
	for i := range stream {
		chunks[i] = stream[i : i+1]
	}
	if got := collect(t, &s, chunks...); !slices.Equal(got, want) {
		t.Fatal("byte-by-byte feeding differs")
	}
}

func TestSplitterBoundary(t *testing.T) {
	exact := strings.Repeat("x", frame.MaxLine)
	over := exact + "y"
	for _, chunk := range []int{1, 7, 4096, frame.MaxLine, frame.MaxLine + 1, 1 << 20} {
		stream := []byte(exact + "\n" + over + "\n" + "tail\n" + "partial")
		var chunks [][]byte
		for p := stream; len(p) > 0; {
			n := min(chunk, len(p))
			chunks = append(chunks, p[:n])
			p = p[n:]
		}
		var s frame.Splitter
		got := collect(t, &s, chunks...)
		if want := []string{exact, tooLongMark, "tail"}; !slices.Equal(got, want) {
			t.Errorf("chunk %d: got %d events %.20q", chunk, len(got), got)
		}
		if s.Pending() != len("partial") {
			t.Errorf("chunk %d: Pending = %d", chunk, s.Pending())
		}
	}
}

func TestSplitterOversizeThenValidFrame(t *testing.T) {
	f := typical()
	good := frame.Append(nil, &f)
	huge := append([]byte(frame.Prefix+`{"component_id":"x","status":"y","pad":"`), bytes.Repeat([]byte("z"), 3*frame.MaxLine)...)
	huge = append(huge, "\"}\n"...)
	stream := append(append(append([]byte{}, good...), huge...), good...)
	r := rand.New(rand.NewPCG(11, 12))
	for range 20 {
		var s frame.Splitter
		var frames []frame.Frame
		drops := 0
		for _, c := range randomChunks(r, stream) {
			s.Feed(c, func(b []byte) {
				got, err := frame.Parse(b)
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				frames = append(frames, got)
			}, func() { drops++ })
		}
		if len(frames) != 2 || frames[0] != f || frames[1] != f || drops != 1 {
			t.Fatalf("frames %d, drops %d", len(frames), drops)
		}
	}
}

func TestSplitterMemoryBound(t *testing.T) {
	var s frame.Splitter
	chunk := bytes.Repeat([]byte("A"), 1000)
	drops := 0
	for fed := 0; fed < 10<<20; fed += len(chunk) {
		s.Feed(chunk, func([]byte) { t.Fatal("line from a stream without newline") }, func() { drops++ })
		if s.Pending() > frame.MaxLine || s.Cap() > frame.MaxLine {
			t.Fatalf("after %d bytes: pending %d cap %d", fed, s.Pending(), s.Cap())
		}
	}
	if drops != 1 {
		t.Fatalf("tooLong called %d times, want 1", drops)
	}
	// The over-long line ends; the next line is delivered normally.
	f := typical()
	var got []frame.Frame
	s.Feed(append([]byte("AAA\n"), frame.Append(nil, &f)...), func(b []byte) {
		g, err := frame.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, g)
	}, func() { drops++ })
	if len(got) != 1 || got[0] != f || drops != 1 || s.Pending() != 0 {
		t.Fatalf("after recovery: %d frames, %d drops, pending %d", len(got), drops, s.Pending())
	}

	// Feeding one huge chunk without a newline buffers nothing.
	var s2 frame.Splitter
	s2.Feed(make([]byte, 10<<20), func([]byte) {}, nil)
	if s2.Pending() != 0 || s2.Cap() != 0 {
		t.Fatalf("huge chunk: pending %d cap %d", s2.Pending(), s2.Cap())
	}
}

func TestSplitterPendingAndReset(t *testing.T) {
	var s frame.Splitter
	var lines []string
	on := func(b []byte) { lines = append(lines, string(b)) }
	s.Feed([]byte("abc"), on, nil)
	if s.Pending() != 3 {
		t.Fatalf("Pending = %d", s.Pending())
	}
	s.Feed([]byte("def\n\n\ngh"), on, nil)
	if !slices.Equal(lines, []string{"abcdef", "", ""}) || s.Pending() != 2 {
		t.Fatalf("lines %q pending %d", lines, s.Pending())
	}
	s.Feed(nil, on, nil)
	s.Reset()
	if s.Pending() != 0 {
		t.Fatal("Reset kept data")
	}
	s.Feed([]byte("\n"), on, nil)
	if !slices.Equal(lines, []string{"abcdef", "", "", ""}) {
		t.Fatalf("lines %q", lines)
	}
}

func TestSplitterLineValidOnlyDuringCall(t *testing.T) {
	// A line assembled from several chunks lives in the splitter's buffer;
	// the next line may overwrite it. Callers must copy what they keep.
	var s frame.Splitter
	var first []byte
	s.Feed([]byte("one"), func([]byte) {}, nil)
	s.Feed([]byte("\n"), func(b []byte) { first = bytes.Clone(b) }, nil)
	s.Feed([]byte("two"), func([]byte) {}, nil)
	s.Feed([]byte("\n"), func(b []byte) {
		if string(b) != "two" {
			t.Fatalf("got %q", b)
		}
	}, nil)
	if string(first) != "one" {
		t.Fatalf("first = %q", first)
	}
}

func TestSplitterNoAllocSteadyState(t *testing.T) {
	f := typical()
	line := frame.Append(nil, &f)
	stream := bytes.Repeat(line, 20)
	var s frame.Splitter
	on := func([]byte) {}
	s.Feed(stream[:100], on, nil) // warm the buffer
	s.Feed(stream[100:], on, nil)
	n := testing.AllocsPerRun(100, func() {
		for p := stream; len(p) > 0; {
			k := min(97, len(p))
			s.Feed(p[:k], on, nil)
			p = p[k:]
		}
	})
	if n != 0 {
		t.Errorf("Feed allocates %v times per stream", n)
	}
}

func TestParseSplitterPipeline(t *testing.T) {
	// Frames, garbage, and oversize lines interleaved and randomly chunked:
	// every good frame arrives, every bad line is classified.
	r := rand.New(rand.NewPCG(13, 14))
	var stream []byte
	var want []frame.Frame
	wantErr := map[error]int{}
	for i := range 2000 {
		switch r.IntN(6) {
		case 0:
			stream = append(stream, "garbage line\n"...)
			wantErr[frame.ErrNoPrefix]++
		case 1:
			stream = append(stream, "HEALTH|{not json\n"...)
			wantErr[frame.ErrBadJSON]++
		case 2:
			stream = append(stream, "HEALTH|{\"status\":\"x\"}\n"...)
			wantErr[frame.ErrMissingField]++
		case 3:
			if r.IntN(10) == 0 {
				stream = append(stream, bytes.Repeat([]byte("H"), frame.MaxLine+1+r.IntN(1000))...)
				stream = append(stream, '\n')
				wantErr[frame.ErrTooLong]++
				continue
			}
			fallthrough
		default:
			f := randomFrame(r)
			f.Seq = uint64(i)
			stream = frame.Append(stream, &f)
			want = append(want, f)
		}
	}
	var s frame.Splitter
	var p frame.Parser
	var got []frame.Frame
	gotErr := map[error]int{}
	for _, c := range randomChunks(r, stream) {
		s.Feed(c, func(b []byte) {
			f, err := p.Parse(b)
			if err != nil {
				for _, e := range []error{frame.ErrNoPrefix, frame.ErrBadJSON, frame.ErrMissingField, frame.ErrTooLong} {
					if errors.Is(err, e) {
						gotErr[e]++
					}
				}
				return
			}
			got = append(got, f)
		}, func() { gotErr[frame.ErrTooLong]++ })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for e, n := range wantErr {
		if gotErr[e] != n {
			t.Errorf("%v: got %d, want %d", e, gotErr[e], n)
		}
	}
}
