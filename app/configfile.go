package app

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/nomarr/nomarr/config"
)

// readConfigFile reads config.yaml as a mapping of key to text. Values are
// the scalars' source text (node.Value), never YAML's typed reading of
// them: a token such as 0123, 0x1F or 1e3, or a node name such as
// 2024-01-01, stays what the user typed, and each key's own parser checks
// the type. A null or empty value (`api_token:`, `api_token: ~`) leaves the
// key unset: it is left out of the result. A list or mapping value, a
// duplicated key and a document that is not a mapping are errors naming
// the key (or the file).
func readConfigFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	out := map[string]string{}
	if doc.Kind == 0 || len(doc.Content) == 0 { // empty file, or only comments
		return out, nil
	}
	root := resolveAlias(doc.Content[0])
	if isNull(root) {
		return out, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s: line %d: want a mapping of key: value", path, root.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolveAlias(root.Content[i+1])
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("config file %s: line %d: a key must be a name", path, k.Line)
		}
		if seen[key] {
			return nil, fmt.Errorf("config file %s: line %d: key %q is set twice", path, k.Line, key)
		}
		seen[key] = true
		switch {
		case v.Kind == yaml.ScalarNode && isNull(v):
			continue // unset
		case v.Kind == yaml.ScalarNode:
			out[key] = v.Value
		default:
			return nil, fmt.Errorf("config file %s: line %d: key %q: want a single value, got a %s",
				path, v.Line, key, kindName(v.Kind))
		}
	}
	return out, nil
}

// resolveAlias follows a YAML alias (*name) to its anchored node.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is YAML's null: an empty plain value, ~, null.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	}
	return "non-scalar value"
}

// loadFile applies config.yaml; a key beats its alias (config.SortKeys).
func (s *Settings) loadFile(path string) error {
	m, err := readConfigFile(path)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	config.SortKeys(keys)
	for _, k := range keys {
		if err := s.set(fromFile, k, m[k]); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
	}
	return nil
}
