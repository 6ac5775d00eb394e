package store

import (
	"context"
	"errors"
	"unicode/utf8"
)

// FileInfo is what a file's own tags say of it, as its last analysis read
// them (artist, title, album), and its duration as decoded (0: unknown).
// A library search looks in the three texts (BrowseMatch).
type FileInfo struct {
	Artist, Title, Album string
	DurationMs           int64
}

// MaxInfoText bounds each text of a FileInfo, in bytes; CheckFileInfo
// refuses longer ones.
const MaxInfoText = 1024

// FileInfos keeps one FileInfo per file: the last put. It goes with the
// file when the file is forgotten (ForgetMissing).
type FileInfos interface {
	// PutFileInfo stores info as fileKey's, replacing the one it had.
	// ErrNotFound: no such file. An info CheckFileInfo refuses is an
	// error and nothing is stored.
	PutFileInfo(ctx context.Context, fileKey string, info FileInfo) error
	// FileInfo returns fileKey's info, the zero FileInfo when none was
	// put; ErrNotFound: no such file.
	FileInfo(ctx context.Context, fileKey string) (FileInfo, error)
}

// CheckFileInfo reports why a store refuses info: a text that is not
// UTF-8 or longer than MaxInfoText, a negative duration.
func CheckFileInfo(info FileInfo) error {
	for _, s := range []string{info.Artist, info.Title, info.Album} {
		if !utf8.ValidString(s) {
			return errors.New("store: file info text is not UTF-8")
		}
		if len(s) > MaxInfoText {
			return errors.New("store: file info text longer than 1024 bytes")
		}
	}
	if info.DurationMs < 0 {
		return errors.New("store: negative file duration")
	}
	return nil
}
