package store

import "testing"

// What an upsert does with a file: new files are inserted whatever their
// number; an observation not newer than the stored one leaves the file,
// whatever it says; otherwise another size or mtime is a change, the same
// stat with another validity a return, and the rest unchanged. A number
// above the sequence counts as the sequence's value.
func TestUpsertOutcomeOf(t *testing.T) {
	stored := &File{Size: 100, MtimeMs: 5, IsValid: false, StatSeq: 7}
	with := func(size, mtime int64, valid bool, seq int64) File {
		return File{Size: size, MtimeMs: mtime, IsValid: valid, StatSeq: seq}
	}
	for _, c := range []struct {
		name    string
		stored  *File
		given   File
		counter int64
		want    UpsertOutcome
	}{
		{"new", nil, with(1, 1, true, 3), 10, UpsertInserted},
		{"new, older number", nil, with(1, 1, true, 1), 10, UpsertInserted},
		{"changed size", stored, with(101, 5, false, 8), 10, UpsertChanged},
		{"changed mtime", stored, with(100, 6, true, 8), 10, UpsertChanged},
		{"changed, no number", stored, with(101, 5, true, 0), 10, UpsertChanged},
		{"back", stored, with(100, 5, true, 8), 10, UpsertReturned},
		{"unchanged", stored, with(100, 5, false, 8), 10, UpsertUnchanged},
		{"changed, older number", stored, with(101, 5, true, 6), 10, UpsertUnchanged},
		{"changed, the same number", stored, with(101, 5, true, 7), 10, UpsertUnchanged},
		{"back, older number", stored, with(100, 5, true, 7), 10, UpsertUnchanged},
		{"number above the sequence, clamped to it", stored, with(101, 5, true, 50), 7, UpsertUnchanged},
		{"number above the sequence, clamped above the stamp", stored, with(101, 5, true, 50), 8, UpsertChanged},
	} {
		if got := UpsertOutcomeOf(c.stored, c.given, c.counter); got != c.want {
			t.Errorf("%s: UpsertOutcomeOf = %d, want %d", c.name, got, c.want)
		}
	}
}

// Upserted counts one file per outcome.
func TestUpsertedCount(t *testing.T) {
	var u Upserted
	for _, o := range []UpsertOutcome{UpsertInserted, UpsertChanged, UpsertChanged, UpsertReturned, UpsertUnchanged, UpsertInserted, UpsertUnchanged, UpsertUnchanged} {
		u.Count(o)
	}
	if want := (Upserted{Inserted: 2, Changed: 2, Returned: 1, Unchanged: 3}); u != want || u.Files() != 8 {
		t.Fatalf("counted %+v (%d files), want %+v (8)", u, u.Files(), want)
	}
}
