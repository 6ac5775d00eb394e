package inventory

import (
	"encoding/json"
	"fmt"
	"time"
)

// ModelSetsKey is the meta key that records, per host (node name), the
// model-set version its last scan ran under: the hosts sharing one store
// learn from it whether they all tag with the same models.
const ModelSetsKey = "models:versions"

// ModelSetFresh is how long a host's record counts after it was last
// written: a host that stopped (decommissioned, its daemon down, a trial
// run over) no longer holds the others back after it. A main process
// that runs workers writes its record at each scan and every
// ModelSetRenew while it runs, so its record stays fresh.
const ModelSetFresh = 2 * time.Hour

// ModelSetRenew is how often a running main process writes its record.
const ModelSetRenew = 30 * time.Minute

// ModelSet is one host's record: the version its last scan ran under, and
// when (wall clock, Unix ms).
type ModelSet struct {
	Version string `json:"version"`
	AtMs    int64  `json:"at_ms"`
}

// ModelSets maps node names to their records (the value of ModelSetsKey).
//
// A scan sends files tagged by another model set back to work
// (Scan.Stale, store.Inventory.Retag) only while no other host has run a
// scan under another version within ModelSetFresh (Conflict). Without
// that, two hosts with different models on one store would each send the
// other's files back at every scan, and their workers tag them again, for
// ever: one host given the wrong models_dir would keep a whole library
// busy. So a host with other models holds every host's re-tagging back
// (each says so at every scan) until they all agree; in a rolling upgrade
// the library is tagged again once the last host runs the new models.
// Report tells an operator which records hold a host back and until
// when; Forget drops the record of a host gone with other models, which
// would otherwise hold every host back until it lapses.
type ModelSets map[string]ModelSet

// DecodeModelSets parses the value of ModelSetsKey; "" (no record yet)
// is an empty map.
func DecodeModelSets(raw string) (ModelSets, error) {
	sets := ModelSets{}
	if raw == "" {
		return sets, nil
	}
	if err := json.Unmarshal([]byte(raw), &sets); err != nil {
		return nil, fmt.Errorf("inventory: decode %s %q: %w", ModelSetsKey, raw, err)
	}
	return sets, nil
}

// Encode is the value of ModelSetsKey for m (keys in order: the same map
// gives the same value, which a compare-and-set compares).
func (m ModelSets) Encode() string {
	b, _ := json.Marshal(map[string]ModelSet(m)) // cannot fail; encoding/json sorts map keys
	return string(b)
}

// Record returns the records with node's set to version at now, and
// without those older than ModelSetFresh. m is not changed.
func (m ModelSets) Record(node, version string, now time.Time) ModelSets {
	out := make(ModelSets, len(m)+1)
	for n, s := range m {
		if n != node && fresh(s, now) {
			out[n] = s
		}
	}
	out[node] = ModelSet{Version: version, AtMs: now.UnixMilli()}
	return out
}

// Conflict returns a host other than node whose record, within
// ModelSetFresh of now, names another version than version ("" when
// none; the first in name order when several).
func (m ModelSets) Conflict(node, version string, now time.Time) (string, ModelSet) {
	for _, n := range m.names() {
		if s := m[n]; n != node && s.Version != version && fresh(s, now) {
			return n, s
		}
	}
	return "", ModelSet{}
}

// fresh reports whether a record made at s.AtMs still counts at now: it
// is at most ModelSetFresh old, and at most ModelSetFresh in the future
// (another host's clock ahead), so a host whose clock ran days ahead does
// not hold the others back for days. Hosts' clocks must agree within
// ModelSetFresh (NTP) for a record to be seen at all.
func fresh(s ModelSet, now time.Time) bool {
	age := now.Sub(time.UnixMilli(s.AtMs))
	return age <= ModelSetFresh && age >= -ModelSetFresh
}
