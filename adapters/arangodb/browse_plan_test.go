package arangodb

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
)

// TestBrowsePlansReal: on a real server, every query of browseIndexed reads
// its index in order and stops at the page's end: the plan enumerates
// library_files through that index only (no collection scan) and keeps no
// SORT (the index's order is the page's); every query of browseLabelAQL
// reads file_tags through the label index, scanning no collection; every
// query of scores.go reads its score index (a page's tail past the files
// with the score: the primary index), scanning no collection, and a
// score-sorted page keeps no sort. Needs NOMARR_TEST_ARANGO_URL or a
// Docker engine.
func TestBrowsePlansReal(t *testing.T) {
	base, ok := serverURL(t, true)
	if !ok {
		t.Skip(skipMsg)
	}
	s := openReal(t, freshDatabase(t, base))
	for sort, ix := range browseIndexes {
		for _, desc := range []bool{false, true} {
			for _, status := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s desc=%v status=%v", sort, desc, status), func(t *testing.T) {
					bind := map[string]any{"offset": 100, "limit": 50}
					if status {
						bind["status"] = "tagged"
					}
					res, err := s.db.ExplainQuery(t.Context(), browseIndexedAQL(ix.index, ix.attr, desc, status), bind, nil)
					if err != nil {
						t.Fatal(err)
					}
					nodes := planUses(t, res.Plan, ix.index)
					for _, n := range nodes {
						if n["type"] == "SortNode" {
							t.Errorf("the plan sorts: %v", n)
						}
					}
				})
			}
		}
	}
	// browseLabelAQL: the tags holding the labels are read through the
	// label index, not by a scan; the matches are then sorted.
	for n := 1; n <= 2; n++ {
		for _, desc := range []bool{false, true} {
			t.Run(fmt.Sprintf("labels=%d desc=%v", n, desc), func(t *testing.T) {
				bind := map[string]any{"offset": 100, "limit": 50, "status": "tagged", "text": "", "sort": "path",
					"scores": []map[string]any{{"key": "happy_musicnn_mood_happy", "min": 0.5, "max": 1}}, "label0": "loose:happy"}
				if n == 2 {
					bind["label1"] = "top:rock"
				}
				res, err := s.db.ExplainQuery(t.Context(), browseLabelAQL(n, desc), bind, nil)
				if err != nil {
					t.Fatal(err)
				}
				planUses(t, res.Plan, labelIndex)
			})
		}
	}
	// scores.go: each range, head and count query reads file_tags through
	// its score index, each tail library_files through the primary index,
	// scanning no collection; the head and the tail keep no sort.
	for name, aql := range scoreAQLs() {
		t.Run(name, func(t *testing.T) {
			bind := map[string]any{}
			for _, m := range bindRE.FindAllStringSubmatch(aql, -1) {
				bind[m[1]] = map[string]any{"offset": 100, "limit": 50, "skip": 100, "status": "tagged", "text": "",
					"sort": "path", "min": 0.5, "max": 1, "scores": []map[string]any{{"key": "happy_musicnn_mood_happy", "min": 0.5, "max": 1}}}[m[1]]
			}
			res, err := s.db.ExplainQuery(t.Context(), aql, bind, nil)
			if err != nil {
				t.Fatal(err)
			}
			index := strings.Fields(name)[0]
			rest := strings.Contains(name, " rest ")
			if rest {
				index = "primary"
			}
			nodes := planUses(t, res.Plan, index)
			if rest || strings.Contains(name, " head ") {
				for _, n := range nodes {
					if n["type"] == "SortNode" {
						t.Errorf("the plan sorts: %v", n)
					}
				}
			}
		})
	}
}

// planUses checks that a plan enumerates no collection by a scan and
// reads index through an IndexNode, and returns its nodes.
func planUses(t *testing.T, plan arangodb.ExplainQueryResultPlan, index string) []map[string]any {
	t.Helper()
	var nodes []map[string]any
	for _, n := range plan.NodesRaw {
		nodes = append(nodes, planNodes(n)...)
	}
	used := false
	for _, n := range nodes {
		switch n["type"] {
		case "EnumerateCollectionNode":
			t.Errorf("the plan scans a collection: %v", n["collection"])
		case "IndexNode":
			list, _ := n["indexes"].([]any)
			for _, i := range list {
				if m, _ := i.(map[string]any); m["name"] == index {
					used = true
				}
			}
		}
	}
	if !used {
		t.Errorf("no IndexNode uses %s; rules applied: %v", index, plan.Rules)
	}
	return nodes
}

// planNodes is a plan node with the nodes of its subquery (servers before
// 3.8 nest a subquery's plan in its SubqueryNode).
func planNodes(n map[string]any) []map[string]any {
	out := []map[string]any{n}
	if sq, ok := n["subquery"].(map[string]any); ok {
		list, _ := sq["nodes"].([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				out = append(out, planNodes(m)...)
			}
		}
	}
	return out
}

// TestBrowseIndexesInSchema: each index browseIndexed names is one the
// bootstrap creates, ordered by the page's sort field then _key, and
// storing every attribute browseStatus reads, and the label index is one
// on file_tags' labels, and each score index one on file_tags' score then
// key, so that the plans above can hold.
func TestBrowseIndexesInSchema(t *testing.T) {
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bf\.([a-z_]+)`).FindAllStringSubmatch(browseStatus, -1) {
		read[m[1]] = true
	}
	if len(read) == 0 {
		t.Fatal("browseStatus reads no attribute of f")
	}
	for sort, want := range browseIndexes {
		i := slices.IndexFunc(indexes, func(ix index) bool { return ix.name == want.index })
		if i < 0 {
			t.Errorf("sort %s: the bootstrap creates no index %s", sort, want.index)
			continue
		}
		ix := indexes[i]
		if ix.coll != colFiles || !slices.Equal(ix.fields, []string{want.attr, "_key"}) {
			t.Errorf("sort %s: index %s is on %s %v, want %s [%s _key]", sort, ix.name, ix.coll, ix.fields, colFiles, want.attr)
		}
		for a := range read {
			if !slices.Contains(ix.stored, a) {
				t.Errorf("sort %s: index %s does not store %s, which a status filter reads", sort, ix.name, a)
			}
		}
	}
	i := slices.IndexFunc(indexes, func(ix index) bool { return ix.name == labelIndex })
	if i < 0 || indexes[i].coll != colTags || !slices.Equal(indexes[i].fields, []string{"labels[*]"}) {
		t.Errorf("the bootstrap creates no index %s on %s [labels[*]] (browseLabelAQL reads it)", labelIndex, colTags)
	}
	for _, sx := range scoreIndexes {
		i := slices.IndexFunc(indexes, func(ix index) bool { return ix.name == sx.name })
		if i < 0 || indexes[i].coll != colTags || !slices.Equal(indexes[i].fields, []string{"scores." + sx.key, "_key"}) {
			t.Errorf("the bootstrap creates no index %s on %s [scores.%s _key] (scores.go reads it)", sx.name, colTags, sx.key)
		}
	}
}
