package frame

import "bytes"

// Splitter cuts a byte stream that arrives in arbitrary chunks (reads from a
// pipe) into lines. It is pure: it performs no I/O and starts no goroutines.
// The zero value is ready to use. A Splitter must not be used by more than
// one goroutine at a time, and Feed must not be called from its own callbacks.
//
// Invariants:
//   - Lines are delivered in stream order, without their '\n', each exactly
//     once, whatever the chunking: feeding a stream in any split gives the
//     same sequence of line and tooLong calls.
//   - A line of at most MaxLine bytes is always delivered. A line longer than
//     MaxLine is never delivered and never buffered beyond MaxLine bytes: it
//     is discarded up to and including its '\n' and reported by exactly one
//     tooLong call, made as soon as the overflow is seen. The next line is
//     handled normally.
//   - The internal buffer holds only the incomplete tail of the current line,
//     so its length (Pending) never exceeds MaxLine and its capacity never
//     exceeds MaxLine, whatever is fed. Complete lines that arrive in a
//     single chunk are passed through without copying.
//   - A final line without '\n' stays pending; it is not delivered.
type Splitter struct {
	buf []byte
	// discarding is set while skipping the rest of an over-long line.
	discarding bool
}

// Feed consumes p and calls line(b) for every complete line (without its
// '\n'); b is only valid during the call. A line longer than MaxLine is
// discarded up to its newline and reported once via tooLong (which may be
// nil). Feed does not retain p.
func (s *Splitter) Feed(p []byte, line func([]byte), tooLong func()) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if s.discarding {
			if i < 0 {
				return
			}
			s.discarding = false
			p = p[i+1:]
			continue
		}
		if i < 0 {
			if len(s.buf)+len(p) > MaxLine {
				s.overflow(tooLong)
				return
			}
			s.store(p)
			return
		}
		switch {
		case len(s.buf)+i > MaxLine:
			s.buf = s.buf[:0]
			if tooLong != nil {
				tooLong()
			}
		case len(s.buf) == 0:
			line(p[:i])
		default:
			s.store(p[:i])
			b := s.buf
			s.buf = s.buf[:0]
			line(b)
		}
		p = p[i+1:]
	}
}

// overflow drops the buffered part of an over-long line, reports it, and
// skips input up to the next newline.
func (s *Splitter) overflow(tooLong func()) {
	s.buf = s.buf[:0]
	s.discarding = true
	if tooLong != nil {
		tooLong()
	}
}

// store appends p to the buffer; the caller guarantees the result fits in
// MaxLine. Capacity grows geometrically but is capped at MaxLine.
func (s *Splitter) store(p []byte) {
	n := len(s.buf) + len(p)
	if n > cap(s.buf) {
		c := 2 * cap(s.buf)
		if c < 512 {
			c = 512
		}
		for c < n {
			c *= 2
		}
		if c > MaxLine {
			c = MaxLine
		}
		nb := make([]byte, len(s.buf), c)
		copy(nb, s.buf)
		s.buf = nb
	}
	s.buf = append(s.buf, p...)
}

// Pending reports how many bytes of an incomplete line are buffered. It is
// always <= MaxLine; bytes of a line being discarded are not counted.
func (s *Splitter) Pending() int { return len(s.buf) }

// Cap reports the capacity of the internal buffer, always <= MaxLine. It
// exists so that memory bounds can be checked.
func (s *Splitter) Cap() int { return cap(s.buf) }

// Reset forgets any partial line and releases the buffer.
func (s *Splitter) Reset() { *s = Splitter{} }
