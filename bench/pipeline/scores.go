package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/nomarr/nomarr/core/tags"
)

// scoreFile is where the scores of path are kept under dir: the path with
// its separators replaced, so that files of the same name in different
// folders do not collide.
func scoreFile(dir, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(abs, "/"), "/", "_")+".scores")
}

// scoreRows lays out every patch's scores as one row: the 50 MSD
// activations, then the heads' two classes in tags.Heads order.
func scoreRows(p tags.Predictions) [][]float32 {
	rows := make([][]float32, len(p.MSD))
	for i := range rows {
		r := append([]float32(nil), p.MSD[i]...)
		for _, h := range tags.Heads {
			r = append(r, p.Heads[h][i]...)
		}
		rows[i] = r
	}
	return rows
}

// writeScores writes rows as little-endian: the row count and width as
// uint32, then the values.
func writeScores(name string, rows [][]float32) error {
	width := 0
	if len(rows) > 0 {
		width = len(rows[0])
	}
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(rows)))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(width))
	for _, r := range rows {
		for _, v := range r {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	return os.WriteFile(name, buf, 0o644)
}

func readScores(name string) ([][]float32, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%s: %w", name, io.ErrUnexpectedEOF)
	}
	n, w := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	if len(b) != 8+4*n*w {
		return nil, fmt.Errorf("%s: %d bytes for %d rows of %d", name, len(b), n, w)
	}
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, w)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*(i*w+j):]))
		}
	}
	return rows, nil
}

// scoreDiff is how far two runs' scores of one file are apart: the
// largest difference of a patch's score, and of a column's pooled mean and
// spread (standard deviation over the patches, as tags.Derive pools them
// before rounding).
type scoreDiff struct{ patch, mean, spread float64 }

func compareScores(a, b [][]float32) (scoreDiff, error) {
	var d scoreDiff
	if len(a) != len(b) {
		return d, fmt.Errorf("%d patches, %d before", len(a), len(b))
	}
	if len(a) == 0 {
		return d, nil
	}
	w := len(a[0])
	for i := range a {
		if len(a[i]) != w || len(b[i]) != w {
			return d, errors.New("rows of different widths")
		}
		for j := range a[i] {
			d.patch = math.Max(d.patch, math.Abs(float64(a[i][j])-float64(b[i][j])))
		}
	}
	ma, sa := pooled(a)
	mb, sb := pooled(b)
	for j := range ma {
		d.mean = math.Max(d.mean, math.Abs(ma[j]-mb[j]))
		d.spread = math.Max(d.spread, math.Abs(sa[j]-sb[j]))
	}
	return d, nil
}

// pooled is each column's mean and standard deviation over the rows.
func pooled(rows [][]float32) (mean, spread []float64) {
	w := len(rows[0])
	n := float64(len(rows))
	mean, spread = make([]float64, w), make([]float64, w)
	for j := range w {
		for _, r := range rows {
			mean[j] += float64(r[j])
		}
		mean[j] /= n
		for _, r := range rows {
			d := float64(r[j]) - mean[j]
			spread[j] += d * d
		}
		spread[j] = math.Sqrt(spread[j] / n)
	}
	return mean, spread
}
