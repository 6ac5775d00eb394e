package store

import "testing"

// Only a flag that reads as false pauses the workers.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		v    string
		ok   bool
		want bool
	}{
		{"", false, true},       // never set
		{"false", true, false},  // paused
		{"0", true, false},      // paused, as strconv reads it
		{"FALSE", true, false},  // paused
		{"true", true, true},    // resumed
		{"1", true, true},       // resumed
		{"garbage", true, true}, // unreadable: never stops the fleet
		{"false", false, true},  // a value without the key is no flag
	} {
		if got := Enabled(c.v, c.ok); got != c.want {
			t.Errorf("Enabled(%q, %v) = %v, want %v", c.v, c.ok, got, c.want)
		}
	}
}
