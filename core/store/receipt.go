package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Death names one death of a worker for ReleaseWorker. A caller that did
// not hear the answer of a release (a fault: the store may have made it,
// as after a timeout that follows the commit) tries it again with the same
// Death, and learns from the answer what the first call released.
type Death struct {
	// ID tells this death from every other death of the same worker id,
	// across restarts of the main process too (the supervisor: the
	// process generation and the death's time). Empty: the release is not
	// remembered, and a retry reports only what it releases itself.
	ID string
	// At is when the worker died: the store keeps the release's receipt at
	// least ReceiptKeep after it (the next receipt written after that
	// deletes it).
	At time.Time
}

// ReceiptKeep is how long a store keeps a release's receipt after its
// death: a retry that comes later (a store out of reach for a day) finds
// it gone and reports only the claims it releases itself.
const ReceiptKeep = 24 * time.Hour

// ReceiptPrefix begins the meta key of every receipt (ReceiptKey).
const ReceiptPrefix = "released:"

// ReceiptKey is the meta key of the receipt of workerID's last release:
// one per worker id, a later death's replacing it.
func ReceiptKey(workerID string) string { return ReceiptPrefix + workerID }

// Receipt is what a store keeps, in the operation that releases them, of
// the claims a ReleaseWorker released for one death, as it answered.
type Receipt struct {
	Death    string         `json:"death"`
	AtMs     int64          `json:"at_ms"`
	Released []ReceiptEntry `json:"released"`
}

// ReceiptEntry is one Released as a receipt keeps it.
type ReceiptEntry struct {
	File        string `json:"file"`
	CrashCount  int    `json:"crash_count"`
	Quarantined bool   `json:"quarantined,omitempty"`
}

// Encode returns the receipt as a meta value.
func (r *Receipt) Encode() string {
	b, err := json.Marshal(r)
	if err != nil { // a struct of strings, ints and bools always encodes
		panic(fmt.Sprintf("store: encode receipt: %v", err))
	}
	return string(b)
}

// StoredReceipt reads the meta value v written by Receipt.Encode (ok: the
// key exists). Absent or unreadable, it is nil: a value this program
// cannot read is taken as no receipt, and the next receipt of the worker
// id overwrites it, so that it cannot fail every release of the worker.
func StoredReceipt(v string, ok bool) *Receipt {
	if !ok {
		return nil
	}
	var r Receipt
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil
	}
	return &r
}

// Reply is the answer of a ReleaseWorker for death, and the receipt it
// leaves (nil: the stored one, if any, stays as it is), given the stored
// receipt of the worker id (nil: none) and what the call released itself
// (in key order). Every adapter answers through it, so all give the same
// answer:
//   - a receipt of the same death (a retry): its claims, and the ones
//     released now (a later entry for the same file replaces the earlier
//     one), in key order; the receipt grows by the ones released now;
//   - otherwise, what was released now; a receipt of it replaces the
//     stored one when something was released and death has an ID.
func Reply(stored *Receipt, death Death, now []Released) ([]Released, *Receipt) {
	if death.ID == "" {
		return now, nil
	}
	out := now
	if stored != nil && stored.Death == death.ID {
		byKey := make(map[string]Released, len(stored.Released)+len(now))
		for _, e := range stored.Released {
			byKey[e.File] = Released{FileKey: e.File, CrashCount: e.CrashCount, Quarantined: e.Quarantined}
		}
		for _, r := range now {
			byKey[r.FileKey] = r
		}
		out = make([]Released, 0, len(byKey))
		for _, r := range byKey {
			out = append(out, r)
		}
		slices.SortFunc(out, func(a, b Released) int { return strings.Compare(a.FileKey, b.FileKey) })
		if len(now) == 0 {
			return out, nil // the receipt says it all already
		}
	} else if len(now) == 0 {
		return out, nil
	}
	r := &Receipt{Death: death.ID, AtMs: death.At.UnixMilli(), Released: make([]ReceiptEntry, len(out))}
	for i, x := range out {
		r.Released[i] = ReceiptEntry{File: x.FileKey, CrashCount: x.CrashCount, Quarantined: x.Quarantined}
	}
	return out, r
}

// ReceiptExpired reports whether a receipt of a death at atMs is past
// ReceiptKeep at the death at: a call that writes a receipt deletes those.
func ReceiptExpired(atMs int64, at time.Time) bool {
	return atMs < ReceiptCutoff(at)
}

// ReceiptCutoff is the death time, in Unix milliseconds, before which a
// receipt is past ReceiptKeep at the death at.
func ReceiptCutoff(at time.Time) int64 { return at.Add(-ReceiptKeep).UnixMilli() }
