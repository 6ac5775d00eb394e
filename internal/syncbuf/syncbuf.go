// Package syncbuf is a bytes.Buffer safe for concurrent writes and reads:
// a log sink or a running process's output that a test reads meanwhile.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex; the zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
