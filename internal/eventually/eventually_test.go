package eventually

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestTrueReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	True(t, time.Second, "three checks", func() bool { return n.Add(1) == 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times, want 3", n.Load())
	}
}

// failTB records a failure instead of ending the test.
type failTB struct {
	testing.TB
	failed string
}

func (f *failTB) Helper() {}
func (f *failTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestTrueFailsAfterTheLimit(t *testing.T) {
	f := &failTB{TB: t}
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != f {
				panic(r)
			}
		}()
		True(f, 50*time.Millisecond, "never", func() bool { return false })
	}()
	if f.failed == "" {
		t.Fatal("no failure after the limit")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("failed after %s, before the limit", d)
	}
}
