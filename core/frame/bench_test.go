package frame_test

import (
	"fmt"
	"testing"

	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
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

// BenchmarkParseVarying parses 256 different frames in turn (every string
// differs from the previous frame's, so nothing is reused and current_job
// and component_id are allocated each time).
func BenchmarkParseVarying(b *testing.B) {
	var lines [][]byte
	total := 0
	for i := range 256 {
		f := typical()
		f.ComponentID = fmt.Sprintf("worker:tagger:%d", i)
		f.CurrentJob = fmt.Sprintf("job-%08x:/music/Artist %d/Album/%02d Track.flac", i*7919, i, i%20)
		f.Phase = []health.Phase{health.Idle, health.Processing, health.BackingOff}[i%3]
		f.Seq, f.Progress = uint64(i), int64(i*13)
		f.AvgProcessingMs = float64(i) * 1.37
		l := frame.Append(nil, &f)
		lines = append(lines, l[:len(l)-1])
		total += len(l) - 1
	}
	var p frame.Parser
	b.SetBytes(int64(total / len(lines)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := p.Parse(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
		i++
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
