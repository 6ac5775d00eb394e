package store

import "testing"

// An observation replaces a stored one only with a later number; one
// without a number always does.
func TestStatNewer(t *testing.T) {
	for _, c := range []struct {
		given, stored int64
		want          bool
	}{
		{0, 0, true}, {0, 7, true}, // no number
		{1, 0, true}, {8, 7, true}, // later
		{7, 7, false}, {6, 7, false}, // the same batch's, or older
	} {
		if got := StatNewer(c.given, c.stored); got != c.want {
			t.Errorf("StatNewer(%d, %d) = %v, want %v", c.given, c.stored, got, c.want)
		}
	}
}

// An upsert writes a scan's number as given up to the sequence's value,
// and the sequence's value for a number above it.
func TestClampStatSeq(t *testing.T) {
	for _, c := range []struct{ given, counter, want int64 }{
		{0, 0, 0}, {0, 9, 0}, // no number
		{3, 9, 3}, {9, 9, 9}, // taken from this store
		{500, 9, 9}, {500, 0, 0}, // from another store
	} {
		if got := ClampStatSeq(c.given, c.counter); got != c.want {
			t.Errorf("ClampStatSeq(%d, %d) = %d, want %d", c.given, c.counter, got, c.want)
		}
	}
}
