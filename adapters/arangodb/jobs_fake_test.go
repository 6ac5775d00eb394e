package arangodb

import (
	"maps"
	"slices"
)

// The fake's emulations of jobs.go's queries, written against the
// attribute names the AQL uses: == true / == false as AQL compares (a
// missing attribute is null, equal to neither), the version and model set
// compared as the values sent.
func init() {
	emulations[qMarkRetag] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return snapshotKeyedUpdate(
			func(d doc) bool {
				return isTrue(d["tagged"]) && isTrue(d["is_valid"]) && d["failed"] == false &&
					d["tagged_version"] == b["version"] && !isTrue(d["needs_retag"])
			},
			func(d doc) doc { return with(d, "needs_retag", true) })(f, b)
	}
	emulations[qDiscoverRetag] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.jobScan(b, int(num(b["limit"])), marked), nil
	}
	emulations[qDiscoverRetagAll] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.jobScan(b, -1, marked), nil
	}
	emulations[qNeedsVector] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.jobScan(b, int(num(b["limit"])), f.lacksVector(b["model_set"])), nil
	}
	emulations[qNeedsVectorAll] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		return f.jobScan(b, -1, f.lacksVector(b["model_set"])), nil
	}
	emulations[qCountJobs] = func(f *fakeServer, b map[string]any) ([]any, *fakeErr) {
		retag, vector := 0, 0
		lacks := f.lacksVector(b["model_set"])
		for _, fd := range f.colls[colFiles] {
			if marked(fd) {
				retag++
			}
			if b["model_set"] != "" && lacks(fd) {
				vector++
			}
		}
		return []any{doc{"retag": retag, "vector": vector}}, nil
	}
}

// marked is qDiscoverRetag's first FILTER (nomarr_retag's flags): a
// valid, tagged, unfailed file marked for a retag.
func marked(fd doc) bool {
	return isTrue(fd["needs_retag"]) && isTrue(fd["tagged"]) && isTrue(fd["is_valid"]) && fd["failed"] == false
}

// lacksVector is qNeedsVector's index FILTER and its track_vectors probe:
// a valid, tagged, unfailed file tagged by modelSet without a vector of
// modelSet.
func (f *fakeServer) lacksVector(modelSet any) func(fd doc) bool {
	return func(fd doc) bool {
		if !isTrue(fd["tagged"]) || !isTrue(fd["is_valid"]) || fd["failed"] != false || fd["tagged_version"] != modelSet {
			return false
		}
		v, has := f.colls[colVectors][str(fd["_key"])]
		return !has || v["model_set"] != modelSet
	}
}

// jobScan emulates the discovery of a kind's work (qDiscoverRetag,
// qNeedsVector): the files that match, with keys after @after, in key
// order, whose retry and skip times are not after @now, without a claim,
// at most limit of them (negative: all).
func (f *fakeServer) jobScan(b map[string]any, limit int, match func(doc) bool) []any {
	now, after := num(b["now"]), str(b["after"])
	var out []any
	for _, k := range slices.Sorted(maps.Keys(f.colls[colFiles])) {
		fd := f.colls[colFiles][k]
		if k <= after || !match(fd) || num(fd["next_retry_at"]) > now || num(fd["skip_until"]) > now {
			continue
		}
		if _, held := f.colls[colClaims][claimPrefix+k]; held {
			continue
		}
		if limit >= 0 && len(out) == limit {
			break
		}
		out = append(out, with(fd, "_id", colFiles+"/"+k, "_rev", "_r"))
	}
	return out
}
