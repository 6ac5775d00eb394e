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
