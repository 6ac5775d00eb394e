package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds config.yaml, in bytes (1 MiB): a hundred times a file
// setting every key with a comment on each (the whole configuration
// reference is under 10 KiB). It keeps a wrong --config (a device, a log, a
// disc image) from filling memory; the costliest file at the bound, 105,000
// one-line keys, parses in about 0.3 s allocating about 71 MiB.
const MaxFileSize = 1 << 20

// ReadFile reads config.yaml as a mapping of key to text. Values are the
// scalars' source text (node.Value), never YAML's typed reading of them: a
// token such as 0123, 0x1F or 1e3, or a node name such as 2024-01-01, stays
// what the user typed, and each key's own parser (Config.Set) checks the
// type. A null or empty value (`api_token:`, `api_token: ~`) leaves the key
// unset: it is left out of the result. A list or mapping value, a
// duplicated key and a document that is not a mapping are errors naming
// the key (or the file). Keys are returned as written: aliases are not
// resolved (SortKeys orders them so that a key beats its alias).
//
// Only a regular file (or a symbolic link to one) of at most MaxFileSize
// bytes is read; anything else is refused with an error naming the file
// (readRegular).
func ReadFile(path string) (map[string]string, error) {
	data, err := readRegular(path, MaxFileSize)
	if err != nil {
		return nil, err
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

// readRegular returns the contents of the regular file at path, of at most
// limit bytes. A device, FIFO, socket or directory is refused before it is
// opened (opening some devices acts: a watchdog arms), by a stat that
// follows symbolic links; the open uses O_NONBLOCK, so that a path swapped
// for a FIFO in between cannot block, and the open file is checked again.
// The read stops one byte past limit, so a file that grows while it is read
// is refused too. O_NONBLOCK does not change reads of a regular file.
func readRegular(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if err := checkRegular(path, st, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if err := checkRegular(path, st, limit); err != nil {
		return nil, err
	}
	return readAtMost(f, path, limit)
}

// checkRegular refuses st unless it is a regular file of at most limit
// bytes.
func checkRegular(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("config file %s: not a regular file (%s)", path, typeName(st.Mode()))
	}
	if st.Size() > limit {
		return fmt.Errorf("config file %s: too large: %d bytes, at most %d are read", path, st.Size(), limit)
	}
	return nil
}

// readAtMost reads r to its end, taking at most limit+1 bytes from it: more
// than limit is an error naming path.
func readAtMost(r io.Reader, path string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("config file %s: too large: grew past %d bytes while read", path, limit)
	}
	return data, nil
}

// typeName names a file type as a user knows it.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "type " + m.Type().String()
}
