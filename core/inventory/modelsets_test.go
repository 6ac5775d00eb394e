package inventory

import (
	"strconv"
	"testing"
	"time"
)

// Hosts record the version of their scans; another host's fresh record of
// another version is a conflict, a stale one (ModelSetFresh) is dropped
// and ignored, and the value round-trips.
func TestModelSets(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	sets, err := DecodeModelSets("")
	if err != nil || len(sets) != 0 {
		t.Fatalf("DecodeModelSets(\"\") = %v, %v", sets, err)
	}
	if _, err := DecodeModelSets("{"); err == nil {
		t.Error("a damaged value decoded")
	}
	sets = sets.Record("a", "v1", now)
	if n, _ := sets.Conflict("a", "v1", now); n != "" {
		t.Errorf("a host conflicts with itself: %q", n)
	}
	if n, _ := sets.Conflict("a", "v2", now); n != "" {
		t.Errorf("a host's own older version is a conflict: %q (it upgraded)", n)
	}
	sets = sets.Record("b", "v2", now.Add(time.Minute))
	if n, s := sets.Conflict("a", "v1", now.Add(time.Minute)); n != "b" || s.Version != "v2" {
		t.Errorf("Conflict(a, v1) = %q %+v, want b's v2", n, s)
	}
	if n, s := sets.Conflict("b", "v2", now.Add(time.Minute)); n != "a" || s.Version != "v1" {
		t.Errorf("Conflict(b, v2) = %q %+v, want a's v1", n, s)
	}
	// Both on v2: no conflict.
	agreed := sets.Record("a", "v2", now.Add(2*time.Minute))
	if n, _ := agreed.Conflict("b", "v2", now.Add(2*time.Minute)); n != "" {
		t.Errorf("agreeing hosts conflict: %q", n)
	}
	if sets["a"].Version != "v1" {
		t.Error("Record changed its receiver")
	}
	// A host that stopped scanning counts for ModelSetFresh, then not,
	// and the next record drops it.
	later := now.Add(ModelSetFresh)
	if n, _ := sets.Conflict("b", "v2", later); n != "a" {
		t.Errorf("at exactly ModelSetFresh a's record no longer counts")
	}
	later = later.Add(time.Millisecond)
	if n, _ := sets.Conflict("b", "v2", later); n != "" {
		t.Errorf("a stale record conflicts: %q", n)
	}
	if kept := sets.Record("b", "v2", later); len(kept) != 1 || kept["b"].Version != "v2" {
		t.Errorf("Record kept %v, want only b", kept)
	}
	// A record far in the future (a clock days ahead) does not count.
	ahead := ModelSets{"c": {Version: "v9", AtMs: now.Add(ModelSetFresh + time.Minute).UnixMilli()}}
	if n, _ := ahead.Conflict("b", "v2", now); n != "" {
		t.Errorf("a record from beyond ModelSetFresh ahead conflicts: %q", n)
	}
	ahead["c"] = ModelSet{Version: "v9", AtMs: now.Add(time.Minute).UnixMilli()}
	if n, _ := ahead.Conflict("b", "v2", now); n != "c" {
		t.Errorf("a record a minute ahead does not conflict: %q", n)
	}
	// The value round-trips and does not depend on map order.
	back, err := DecodeModelSets(agreed.Encode())
	if err != nil || back.Encode() != agreed.Encode() || len(back) != 2 || back["a"] != agreed["a"] {
		t.Errorf("round trip: %v, %v", back, err)
	}
	if agreed.Encode() != `{"a":{"version":"v2","at_ms":`+strconv.FormatInt(now.Add(2*time.Minute).UnixMilli(), 10)+`},"b":{"version":"v2","at_ms":`+strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10)+`}}` {
		t.Errorf("Encode = %s", agreed.Encode())
	}
}
