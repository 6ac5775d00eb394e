package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printable is s as `failed` and `missing` print a path or a reason in
// their lines: as it is when it is valid UTF-8 of graphic characters
// (letters, marks, numbers, punctuation, symbols, spaces) and does not
// begin with a double quote, else quoted as Go quotes a string
// (strconv.Quote). So a newline or tab in a file name cannot forge a line
// or a field, no escape sequence reaches the terminal, and a line that
// begins with " holds a quoted path, which strconv.Unquote (or any Go
// string reader) turns back into the path's bytes.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.HasPrefix(s, `"`) || strings.IndexFunc(s, func(r rune) bool { return !strconv.IsGraphic(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// listFormat is how `failed` and `missing` print their files: lines for
// a person (printable), JSON Lines (--json), or NUL-terminated raw paths
// (-0).
type listFormat struct {
	json, nul bool
}

// define defines --json and -0 on fs.
func (l *listFormat) define(fs *flag.FlagSet) {
	fs.BoolVar(&l.json, "json", false, "print one JSON object per file and line (JSON Lines)")
	fs.BoolVar(&l.nul, "0", false, "print each file's path as it is, followed by a NUL byte (for xargs -0)")
}

// check refuses --json and -0 together.
func (l *listFormat) check() error {
	if l.json && l.nul {
		return errors.New("--json and -0 do not go together")
	}
	return nil
}

// listedFile is one file as --json prints it. Path is the path as JSON
// carries text: a path that is not valid UTF-8 has its invalid bytes
// replaced by U+FFFD there, and PathBase64 holds its bytes (standard
// base64), present only then.
type listedFile struct {
	Path       string `json:"path"`
	PathBase64 string `json:"path_base64,omitempty"`
	// Error and Missing are failed's: the reason the file failed, and
	// whether the last scan did not find it.
	Error   *string `json:"error,omitempty"`
	Missing *bool   `json:"missing,omitempty"`
}

// newListedFile is path as --json prints it.
func newListedFile(path string) listedFile {
	f := listedFile{Path: path}
	if !utf8.ValidString(path) {
		f.PathBase64 = base64.StdEncoding.EncodeToString([]byte(path))
	}
	return f
}

// jsonLines writes one JSON object per line, HTML characters unescaped.
func jsonLines(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
