package config

import (
	"maps"
	"slices"
	"strings"
)

// aliases map alternative names to keys. docs/design.md §11 names the worker count
// tagger_worker_count; every source that accepts a key (a file, the
// environment, flags, a scenario's config block) accepts its alias too.
var aliases = map[string]string{"tagger_worker_count": "workers"}

// Aliases returns every alias with the key it stands for. The map is a copy.
func Aliases() map[string]string { return maps.Clone(aliases) }

// Canonical returns the key that name stands for: the aliased key for an
// alias, name itself otherwise.
func Canonical(name string) string {
	if k, ok := aliases[name]; ok {
		return k
	}
	return name
}

// SortKeys orders names for applying one source's values: every alias
// before every other name, each group sorted. Applying in this order makes a
// key win over its alias when one source sets both.
func SortKeys(names []string) {
	slices.SortFunc(names, func(a, b string) int {
		_, aa := aliases[a]
		_, ba := aliases[b]
		switch {
		case aa && !ba:
			return -1
		case ba && !aa:
			return 1
		}
		return strings.Compare(a, b)
	})
}
