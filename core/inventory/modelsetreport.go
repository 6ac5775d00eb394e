package inventory

import (
	"sort"
	"time"
)

// modelSetRenewSlack is how much later than ModelSetRenew a running
// host's renewal may land (the model files hashed, the store written):
// a record older than ModelSetRenew plus this missed a renewal, so its
// host most likely stopped.
const modelSetRenewSlack = time.Minute

// HostModelSet is one host's record as an operator is shown it.
type HostModelSet struct {
	Node string
	ModelSet
	// Age is how long ago the record was written (negative: the host's
	// clock is ahead of this one's).
	Age time.Duration
	// Counts: the record is within ModelSetFresh of now, so the hosts'
	// scans take it into account (Conflict); one that does not is
	// dropped at the next record written.
	Counts bool
	// LapsesAt is when the record stops counting unless its host writes
	// it again: AtMs + ModelSetFresh.
	LapsesAt time.Time
	// Renewing: written within ModelSetRenew (and a little more), as a
	// host that still runs serve or tag writes it; a host that stopped
	// writes it no more.
	Renewing bool
}

// ModelSetReport is what the hosts' records mean for one host: which
// records hold its re-tagging back, and until when.
type ModelSetReport struct {
	// Node is the host the report is for; Version is the version of its
	// own record when that counts ("": it has none, as a host that runs
	// no workers, or whose record lapsed).
	Node, Version string
	// Hosts are every record, by node name.
	Hosts []HostModelSet
	// HeldBack: the records that count name more than one version, so
	// no host's scan sends files back to work (each sees a Conflict).
	HeldBack bool
	// HeldBy are the hosts, by name, whose records count and name another
	// version than Version (empty when Version is ""): Conflict(Node,
	// Version) is the first of them. HeldUntil is when the last of their
	// records lapses if they all stop writing (zero when HeldBy is empty).
	HeldBy    []string
	HeldUntil time.Time
}

// Report is what the records mean for node at now (see ModelSetReport).
func (m ModelSets) Report(node string, now time.Time) ModelSetReport {
	r := ModelSetReport{Node: node}
	if own, ok := m[node]; ok && fresh(own, now) {
		r.Version = own.Version
	}
	versions := map[string]bool{}
	for _, n := range m.names() {
		s := m[n]
		at := time.UnixMilli(s.AtMs).In(now.Location())
		h := HostModelSet{Node: n, ModelSet: s, Age: now.Sub(at), Counts: fresh(s, now), LapsesAt: at.Add(ModelSetFresh)}
		h.Renewing = h.Counts && h.Age <= ModelSetRenew+modelSetRenewSlack
		r.Hosts = append(r.Hosts, h)
		if !h.Counts {
			continue
		}
		versions[s.Version] = true
		if r.Version != "" && n != node && s.Version != r.Version {
			r.HeldBy = append(r.HeldBy, n)
			if h.LapsesAt.After(r.HeldUntil) {
				r.HeldUntil = h.LapsesAt
			}
		}
	}
	r.HeldBack = len(versions) > 1
	return r
}

// Forgotten is what forgetting one host's record does (ModelSets.Forget).
type Forgotten struct {
	Host HostModelSet // the record forgotten, as Report showed it
	// Released: the records that count named more than one version and
	// those left name one at most, so the hosts' next scans send the
	// files tagged by other models back to work again.
	Released bool
	// StillHeldBack: the records left that count still name more than
	// one version.
	StillHeldBack bool
}

// Forget returns the records without node's, and what that does; ok is
// false when node has no record (the records are returned as they are).
// The other records are kept as they are, lapsed ones too (the next
// record written drops those). A host whose record is Renewing most
// likely still runs and writes it again within ModelSetRenew: forgetting
// it is harmless, and lasts only until then. m is not changed.
func (m ModelSets) Forget(node string, now time.Time) (left ModelSets, f Forgotten, ok bool) {
	if _, known := m[node]; !known {
		return m, Forgotten{}, false
	}
	before := m.Report(node, now)
	for _, h := range before.Hosts {
		if h.Node == node {
			f.Host = h
		}
	}
	left = make(ModelSets, len(m)-1)
	for n, s := range m {
		if n != node {
			left[n] = s
		}
	}
	after := left.Report(node, now)
	f.Released = before.HeldBack && !after.HeldBack
	f.StillHeldBack = after.HeldBack
	return left, f, true
}

// names are m's node names in order.
func (m ModelSets) names() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
