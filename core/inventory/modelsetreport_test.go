package inventory

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The report shows every record with its age and lapse, and names the
// hosts whose counting records hold the viewer's re-tagging back, with
// the time the last of them lapses; lapsed records and the viewer's own
// do not hold it back.
func TestModelSetReport(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) int64 { return now.Add(-ago).UnixMilli() }

	if r := (ModelSets{}).Report("a", now); len(r.Hosts) != 0 || r.HeldBack || r.HeldBy != nil || r.Version != "" {
		t.Errorf("no record: %+v", r)
	}
	one := ModelSets{"a": {Version: "v1", AtMs: at(10 * time.Minute)}}
	r := one.Report("a", now)
	want := HostModelSet{Node: "a", ModelSet: one["a"], Age: 10 * time.Minute, Counts: true, Renewing: true,
		LapsesAt: now.Add(-10 * time.Minute).Add(ModelSetFresh)}
	if r.Version != "v1" || r.HeldBack || r.HeldBy != nil || !r.HeldUntil.IsZero() || len(r.Hosts) != 1 || r.Hosts[0] != want {
		t.Errorf("one host: %+v, want its record %+v and nothing held back", r, want)
	}

	sets := ModelSets{
		"a": {Version: "v1", AtMs: at(10 * time.Minute)},
		"b": {Version: "v2", AtMs: at(50 * time.Minute)},               // missed a renewal
		"c": {Version: "v3", AtMs: at(3 * time.Hour)},                  // lapsed
		"d": {Version: "v2", AtMs: at(20 * time.Minute)},               // lapses last
		"e": {Version: "v1", AtMs: at(-5 * time.Minute)},               // a clock ahead
		"f": {Version: "v9", AtMs: at(-3 * time.Hour)},                 // a clock far ahead: does not count
		"g": {Version: "v1", AtMs: at(ModelSetRenew + 30*time.Second)}, // renewal under way
	}
	r = sets.Report("a", now)
	if !r.HeldBack || !slices.Equal(r.HeldBy, []string{"b", "d"}) || !r.HeldUntil.Equal(now.Add(-20*time.Minute+ModelSetFresh)) {
		t.Errorf("Report(a): held back %v by %v until %v; want b and d until d's record lapses", r.HeldBack, r.HeldBy, r.HeldUntil)
	}
	if n, _ := sets.Conflict("a", "v1", now); n != r.HeldBy[0] {
		t.Errorf("Conflict names %q, the report %q first", n, r.HeldBy[0])
	}
	byNode := map[string]HostModelSet{}
	var names []string
	for _, h := range r.Hosts {
		byNode[h.Node] = h
		names = append(names, h.Node)
	}
	if !slices.Equal(names, []string{"a", "b", "c", "d", "e", "f", "g"}) {
		t.Errorf("hosts %v, want every record by name", names)
	}
	for n, want := range map[string][2]bool{"a": {true, true}, "b": {true, false}, "c": {false, false}, "d": {true, true},
		"e": {true, true}, "f": {false, false}, "g": {true, true}} {
		if h := byNode[n]; h.Counts != want[0] || h.Renewing != want[1] {
			t.Errorf("%s (age %v): counts %v, renewing %v; want %v, %v", n, h.Age, h.Counts, h.Renewing, want[0], want[1])
		}
	}
	if h := byNode["e"]; h.Age != -5*time.Minute {
		t.Errorf("a record from a clock ahead: age %v, want -5m", h.Age)
	}
	// Seen from b: a, e and g hold it back (d agrees with it).
	if r := sets.Report("b", now); r.Version != "v2" || !slices.Equal(r.HeldBy, []string{"a", "e", "g"}) ||
		!r.HeldUntil.Equal(now.Add(5*time.Minute+ModelSetFresh)) {
		t.Errorf("Report(b): %s held by %v until %v", r.Version, r.HeldBy, r.HeldUntil)
	}
	// A host without a record that counts (none, or lapsed) is held by
	// nobody in particular, but every host is held back.
	for _, n := range []string{"x", "c"} {
		if r := sets.Report(n, now); r.Version != "" || r.HeldBy != nil || !r.HeldBack {
			t.Errorf("Report(%s): %+v; want no version, nobody named, held back", n, r)
		}
	}
	// Agreeing hosts, one lapsed on other models: nothing is held back.
	agreed := ModelSets{"a": sets["a"], "c": sets["c"], "e": sets["e"]}
	if r := agreed.Report("a", now); r.HeldBack || r.HeldBy != nil {
		t.Errorf("agreeing hosts: %+v", r)
	}
}

// Report and Conflict agree on any records: a host is held back exactly
// when Conflict names another host, Conflict's is the first named, and
// a held-back host means every host is.
func TestModelSetReportAgreesWithConflict(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		sets := ModelSets{}
		for range rng.IntN(5) {
			ago := time.Duration(rng.IntN(int(6*ModelSetFresh/time.Minute))-int(3*ModelSetFresh/time.Minute)) * time.Minute
			sets["n"+strconv.Itoa(rng.IntN(6))] = ModelSet{Version: "v" + strconv.Itoa(rng.IntN(3)), AtMs: now.Add(-ago).UnixMilli()}
		}
		for n := range 6 {
			node := "n" + strconv.Itoa(n)
			r := sets.Report(node, now)
			if r.Version == "" {
				continue
			}
			other, _ := sets.Conflict(node, r.Version, now)
			if (other != "") != (len(r.HeldBy) > 0) || (other != "" && other != r.HeldBy[0]) || (other != "") != r.HeldBack {
				t.Fatalf("case %d, %s: Conflict %q, report %+v\nrecords %v", i, node, other, r, sets)
			}
		}
	}
}

// Forget drops one host's record, keeps the others as they are, and says
// whether the re-tagging is let go or still held back; an unknown host
// changes nothing.
func TestModelSetForget(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) int64 { return now.Add(-ago).UnixMilli() }
	sets := ModelSets{
		"a": {Version: "v1", AtMs: at(10 * time.Minute)},
		"b": {Version: "v2", AtMs: at(50 * time.Minute)},
		"c": {Version: "v3", AtMs: at(3 * time.Hour)},
		"d": {Version: "v2", AtMs: at(20 * time.Minute)},
	}
	enc := sets.Encode()
	if left, f, ok := sets.Forget("x", now); ok || left.Encode() != enc || f != (Forgotten{}) {
		t.Errorf("Forget(unknown) = %v, %+v, %v", left, f, ok)
	}
	left, f, ok := sets.Forget("b", now)
	if !ok || f.Host.Node != "b" || f.Host.Version != "v2" || !f.Host.Counts || f.Host.Renewing || f.Released || !f.StillHeldBack {
		t.Errorf("Forget(b) = %+v, %v; want b's counting record gone, still held back by d", f, ok)
	}
	if _, there := left["b"]; there || len(left) != 3 || left["c"] != sets["c"] {
		t.Errorf("left %v, want a, c (lapsed, kept) and d", left)
	}
	if sets.Encode() != enc {
		t.Error("Forget changed its receiver")
	}
	left, f, _ = left.Forget("d", now)
	if !f.Released || f.StillHeldBack || !f.Host.Renewing {
		t.Errorf("Forget(d) after b = %+v; want the re-tagging let go, d's record one being renewed", f)
	}
	if r := left.Report("a", now); r.HeldBack || len(r.Hosts) != 2 {
		t.Errorf("after forgetting b and d: %+v", r)
	}
	// A lapsed record holds nothing back: forgetting it lets nothing go.
	if _, f, ok := sets.Forget("c", now); !ok || f.Host.Counts || f.Released || !f.StillHeldBack {
		t.Errorf("Forget(c) = %+v, %v", f, ok)
	}
	// The last record: nothing left.
	if left, f, ok := (ModelSets{"a": sets["a"]}).Forget("a", now); !ok || len(left) != 0 || f.Released || f.StillHeldBack || left.Encode() != "{}" {
		t.Errorf("Forget(last) = %v, %+v, %v", left, f, ok)
	}
}
