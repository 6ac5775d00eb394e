package store

// UpsertOutcome is what UpsertFiles did with one file of its batch. Every
// store answers by the same rule (UpsertOutcomeOf); SQLite and ArangoDB
// spell it in their own language, and the contract tests check that they
// agree.
type UpsertOutcome int

const (
	// UpsertUnchanged: the file was left as stored: a known file given
	// with the stored size, mtime and validity, or an observation older
	// than the stored one (StatNewer is false), whatever it says.
	UpsertUnchanged UpsertOutcome = iota
	// UpsertInserted: a new file, stored as given.
	UpsertInserted
	// UpsertChanged: a known file given with another size or mtime, as a
	// newer observation: it took them and needs tagging again.
	UpsertChanged
	// UpsertReturned: a known file given with the stored size and mtime
	// but another validity, as a newer observation: it took the validity
	// and kept its tagging state. From a scan, always a file that was not
	// valid (marked missing, or found gone by a job) and is found again:
	// a scan gives "not valid" only to an empty file, and a stored file
	// that became empty changed size.
	UpsertReturned
)

// UpsertOutcomeOf is what UpsertFiles does with given when the file is
// stored as stored (nil: not stored) and the stat sequence's value is
// counter: inserted; left as it is when the observation is not newer than
// the stored one (StatNewer, given's StatSeq clamped by ClampStatSeq);
// changed when its size or mtime differ; returned when only its validity
// does; else unchanged.
func UpsertOutcomeOf(stored *File, given File, counter int64) UpsertOutcome {
	switch {
	case stored == nil:
		return UpsertInserted
	case !StatNewer(ClampStatSeq(given.StatSeq, counter), stored.StatSeq):
		return UpsertUnchanged
	case stored.Size != given.Size || stored.MtimeMs != given.MtimeMs:
		return UpsertChanged
	case stored.IsValid != given.IsValid:
		return UpsertReturned
	}
	return UpsertUnchanged
}

// Upserted counts what one UpsertFiles call did with its batch, one
// outcome per file: a key given twice in the batch is one file (the last
// entry wins), so the counts add up to the batch's distinct keys.
type Upserted struct {
	Inserted, Changed, Returned, Unchanged int
}

// Count adds one file of outcome o.
func (u *Upserted) Count(o UpsertOutcome) {
	switch o {
	case UpsertInserted:
		u.Inserted++
	case UpsertChanged:
		u.Changed++
	case UpsertReturned:
		u.Returned++
	default:
		u.Unchanged++
	}
}

// Files is the number of files counted.
func (u Upserted) Files() int { return u.Inserted + u.Changed + u.Returned + u.Unchanged }
