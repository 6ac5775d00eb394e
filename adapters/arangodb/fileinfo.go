package arangodb

import (
	"context"

	"github.com/nomarr/nomarr/core/store"
)

// qPutInfo stores a file's info, replacing the one it had, only for a
// stored file (reads library_files, writes file_info); no row: no such
// file.
const qPutInfo = `FOR f IN library_files
  FILTER f._key == @key
  UPSERT { _key: @key }
    INSERT { _key: @key, artist: @artist, title: @title, album: @album, duration_ms: @duration_ms }
    REPLACE { _key: @key, artist: @artist, title: @title, album: @album, duration_ms: @duration_ms }
    IN file_info
  RETURN 1`

// qFileInfo reads a stored file's info ({} when none was put).
const qFileInfo = `FOR f IN library_files FILTER f._key == @key RETURN DOCUMENT("file_info", f._key) || {}`

// qForgetInfo deletes the info of @keys (files just forgotten).
const qForgetInfo = `FOR k IN @keys
  FOR i IN file_info
    FILTER i._key == k
    REMOVE i IN file_info
    RETURN 1`

// infoDoc is a file_info document.
type infoDoc struct {
	Artist     string `json:"artist"`
	Title      string `json:"title"`
	Album      string `json:"album"`
	DurationMs num64  `json:"duration_ms"`
}

func (d infoDoc) info() store.FileInfo {
	return store.FileInfo{Artist: d.Artist, Title: d.Title, Album: d.Album, DurationMs: int64(d.DurationMs)}
}

// PutFileInfo implements store.FileInfos in one query (qPutInfo).
func (s *Store) PutFileInfo(ctx context.Context, fileKey string, info store.FileInfo) error {
	if err := store.CheckFileInfo(info); err != nil {
		return s.fail("put file info", fileKey, err)
	}
	if !validFileKey(fileKey) {
		return s.fail("put file info", fileKey, store.ErrNotFound)
	}
	bind := map[string]any{"key": fileKey, "artist": info.Artist, "title": info.Title, "album": info.Album, "duration_ms": info.DurationMs}
	err := s.write(ctx, conflictsOnly, func(ctx context.Context) error {
		n, err := queryAll[int](ctx, s.db, qPutInfo, bind)
		if err == nil && len(n) == 0 {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return s.fail("put file info", fileKey, err)
	}
	return nil
}

// FileInfo implements store.FileInfos.
func (s *Store) FileInfo(ctx context.Context, fileKey string) (store.FileInfo, error) {
	if !validFileKey(fileKey) {
		return store.FileInfo{}, s.fail("file info", fileKey, store.ErrNotFound)
	}
	var docs []infoDoc
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		docs, err = queryAll[infoDoc](ctx, s.db, qFileInfo, map[string]any{"key": fileKey})
		return err
	})
	if err != nil {
		return store.FileInfo{}, s.fail("file info", fileKey, err)
	}
	if len(docs) == 0 {
		return store.FileInfo{}, s.fail("file info", fileKey, store.ErrNotFound)
	}
	return docs[0].info(), nil
}
