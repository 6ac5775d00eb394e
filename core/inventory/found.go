package inventory

import "github.com/nomarr/nomarr/core/store"

// Found is what a scan's upserts did with the files its walk found,
// summed over its batches (store.Upserted, one per batch): new to the
// store, changed (another size or mtime: tagged again), back (found again
// unchanged after a scan marked them missing, or a job found them gone:
// their tags kept) and unchanged. Every file found is in exactly one of
// them, an observation older than the stored one (a job rewrote the file
// after the batch took its stat) in Unchanged.
type Found struct {
	New, Changed, Back, Unchanged int
}

// Add counts one batch's answer.
func (f *Found) Add(u store.Upserted) {
	f.New += u.Inserted
	f.Changed += u.Changed
	f.Back += u.Returned
	f.Unchanged += u.Unchanged
}

// Files is the files counted.
func (f Found) Files() int { return f.New + f.Changed + f.Back + f.Unchanged }
