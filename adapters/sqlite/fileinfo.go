package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/nomarr/nomarr/core/store"
)

// file_info (store.FileInfos) is built with the Browser's side tables
// (browseDDL) but is no side table: nothing rebuilds it. Its rows go with
// their file (the browse_labels_file_delete trigger).

// PutFileInfo implements store.FileInfos: one upsert that writes only for
// a stored file.
func (s *Store) PutFileInfo(ctx context.Context, fileKey string, info store.FileInfo) error {
	if err := store.CheckFileInfo(info); err != nil {
		return s.fail("put file info", fileKey, err)
	}
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO file_info (file_key, artist, title, album, duration_ms)
			SELECT key, ?2, ?3, ?4, ?5 FROM library_files WHERE key = ?1
			ON CONFLICT (file_key) DO UPDATE SET artist = excluded.artist, title = excluded.title,
				album = excluded.album, duration_ms = excluded.duration_ms`,
			fileKey, info.Artist, info.Title, info.Album, info.DurationMs)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return s.fail("put file info", fileKey, err)
	}
	if n == 0 {
		return s.fail("put file info", fileKey, store.ErrNotFound)
	}
	return nil
}

// FileInfo implements store.FileInfos.
func (s *Store) FileInfo(ctx context.Context, fileKey string) (store.FileInfo, error) {
	var info store.FileInfo
	var artist, title, album sql.NullString
	var ms sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT i.artist, i.title, i.album, i.duration_ms
		FROM library_files f LEFT JOIN file_info i ON i.file_key = f.key WHERE f.key = ?`, fileKey).Scan(&artist, &title, &album, &ms)
	if errors.Is(err, sql.ErrNoRows) {
		return info, fmt.Errorf("sqlite: file info %s: %w", fileKey, store.ErrNotFound)
	}
	if err != nil {
		return info, s.fail("file info", fileKey, err)
	}
	return store.FileInfo{Artist: artist.String, Title: title.String, Album: album.String, DurationMs: ms.Int64}, nil
}
