package memstore

import (
	"context"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
)

// PutFileInfo implements store.FileInfos.
func (s *Store) PutFileInfo(_ context.Context, fileKey string, info store.FileInfo) error {
	if err := store.CheckFileInfo(info); err != nil {
		return err
	}
	if err := s.op(); err != nil {
		return err
	}
	if _, ok := s.index[fileKey]; !ok {
		return fmt.Errorf("file info of %q: %w", fileKey, store.ErrNotFound)
	}
	s.infos[fileKey] = info
	return nil
}

// FileInfo implements store.FileInfos.
func (s *Store) FileInfo(_ context.Context, fileKey string) (store.FileInfo, error) {
	if err := s.op(); err != nil {
		return store.FileInfo{}, err
	}
	if _, ok := s.index[fileKey]; !ok {
		return store.FileInfo{}, fmt.Errorf("file info of %q: %w", fileKey, store.ErrNotFound)
	}
	return s.infos[fileKey], nil
}
