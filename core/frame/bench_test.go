package frame_test

import (
	"testing"

	"github.com/nomarr/nomarr/core/frame"
)

// typicalLine is a typical frame line (about 250 bytes, newline excluded).
func typicalLine() []byte {
	f := typical()
	b := frame.Append(nil, &f)
	return b[:len(b)-1]
}

func reportFrames(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

func BenchmarkParse(b *testing.B) {
	line := typicalLine()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := frame.Parse(line); err != nil {
			b.Fatal(err)
		}
	}
	reportFrames(b)
}

func BenchmarkParserParse(b *testing.B) {
	line := typicalLine()
	var p frame.Parser
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(line); err != nil {
			b.Fatal(err)
		}
	}
	reportFrames(b)
}

func BenchmarkAppend(b *testing.B) {
	f := typical()
	buf := make([]byte, 0, 512)
	b.SetBytes(int64(len(frame.Append(nil, &f))))
	b.ReportAllocs()
	for b.Loop() {
		buf = frame.Append(buf[:0], &f)
	}
	reportFrames(b)
}

// BenchmarkSplitterFeed feeds a stream of typical frame lines in 4 KiB
// chunks, so that most lines arrive whole and some straddle chunks.
func BenchmarkSplitterFeed(b *testing.B) {
	line := append(typicalLine(), '\n')
	var stream []byte
	for len(stream) < 1<<20 {
		stream = append(stream, line...)
	}
	var s frame.Splitter
	lines := 0
	onLine := func([]byte) { lines++ }
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		for p := stream; len(p) > 0; {
			n := min(4096, len(p))
			s.Feed(p[:n], onLine, nil)
			p = p[n:]
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}
