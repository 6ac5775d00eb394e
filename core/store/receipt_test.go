package store

import (
	"slices"
	"testing"
	"time"
)

// Reply answers a retry of a death from its receipt, joined with what the
// retry released itself (a newer entry for a file replacing the older),
// and another death with what it released; it keeps a receipt only of a
// death with an ID that released something.
func TestReply(t *testing.T) {
	at := time.UnixMilli(5000)
	d := Death{ID: "2@5000", At: at}
	stored := &Receipt{Death: d.ID, AtMs: 5000, Released: []ReceiptEntry{{File: "b", CrashCount: 2, Quarantined: true}, {File: "c", CrashCount: 1}}}
	a := Released{FileKey: "a", CrashCount: 1}
	c := Released{FileKey: "c", CrashCount: 2, Quarantined: true}
	fromReceipt := []Released{{FileKey: "b", CrashCount: 2, Quarantined: true}, {FileKey: "c", CrashCount: 1}}
	for _, tc := range []struct {
		name     string
		stored   *Receipt
		death    Death
		now      []Released
		want     []Released
		wantKeep []ReceiptEntry // nil: no receipt written
	}{
		{name: "retry", stored: stored, death: d, want: fromReceipt},
		{name: "retry finding claims", stored: stored, death: d, now: []Released{a, c},
			want:     []Released{a, fromReceipt[0], c},
			wantKeep: []ReceiptEntry{{File: "a", CrashCount: 1}, {File: "b", CrashCount: 2, Quarantined: true}, {File: "c", CrashCount: 2, Quarantined: true}}},
		{name: "another death", stored: stored, death: Death{ID: "3@9000", At: at}, now: []Released{a},
			want: []Released{a}, wantKeep: []ReceiptEntry{{File: "a", CrashCount: 1}}},
		{name: "another death releasing nothing", stored: stored, death: Death{ID: "3@9000", At: at}},
		{name: "first", death: d, now: []Released{a}, want: []Released{a}, wantKeep: []ReceiptEntry{{File: "a", CrashCount: 1}}},
		{name: "no death ID", stored: stored, death: Death{ID: "", At: at}, now: []Released{a}, want: []Released{a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, keep := Reply(tc.stored, tc.death, tc.now)
			if !slices.Equal(got, tc.want) {
				t.Errorf("answer = %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.wantKeep == nil && keep != nil:
				t.Errorf("receipt written: %+v", keep)
			case tc.wantKeep != nil && (keep == nil || keep.Death != tc.death.ID || keep.AtMs != at.UnixMilli() || !slices.Equal(keep.Released, tc.wantKeep)):
				t.Errorf("receipt = %+v, want %+v of %s", keep, tc.wantKeep, tc.death.ID)
			}
			if keep != nil {
				back := StoredReceipt(keep.Encode(), true)
				if back == nil || back.Death != keep.Death || back.AtMs != keep.AtMs || !slices.Equal(back.Released, keep.Released) {
					t.Errorf("receipt read back = %+v, want %+v", back, keep)
				}
			}
		})
	}
}

// A meta value that is no receipt is taken as none, so that it cannot
// fail every release of its worker id.
func TestStoredReceiptUnreadable(t *testing.T) {
	for _, v := range []string{"", "not json", `{"death": 3}`} {
		if r := StoredReceipt(v, true); r != nil {
			t.Errorf("StoredReceipt(%q) = %+v, want nil", v, r)
		}
	}
	if r := StoredReceipt(`{"death":"1@1"}`, false); r != nil {
		t.Errorf("absent key read as %+v", r)
	}
}

func TestReceiptExpired(t *testing.T) {
	at := time.UnixMilli(ReceiptKeep.Milliseconds() + 10)
	if !ReceiptExpired(9, at) || ReceiptExpired(10, at) {
		t.Errorf("cutoff %d: want receipts before it expired, at it kept", ReceiptCutoff(at))
	}
}
