package app

import (
	"fmt"

	"github.com/nomarr/nomarr/config"
)

// loadFile applies config.yaml as config.ReadFile reads it (a regular
// file of at most config.MaxFileSize bytes); a key beats its alias
// (config.SortKeys).
func (s *Settings) loadFile(path string) error {
	m, err := config.ReadFile(path)
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
