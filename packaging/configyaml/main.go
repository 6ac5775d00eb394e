// Command configyaml writes the Debian package's /etc/nomarr/config.yaml
// to stdout: every key of package config (the application's keys, then the
// worker system's), each with its meaning and commented out at its
// default, so that the file sets nothing until a line is uncommented.
// scripts/build-deb.sh runs it; the text comes from config.Meaning,
// config.AppKeys and config.Defaults, so a key added there is in the next
// package.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/nomarr/nomarr/config"
)

const header = `# /etc/nomarr/config.yaml: the configuration of nomarr.service, which
# reads it through NOMARR_CONFIG. Every key is listed below, commented out,
# with its default: uncomment a line and change its value to set the key.
# A NOMARR_<KEY> variable or a --flag overrides this file.
#
# Under nomarr.service data_dir is /var/lib/nomarr (the unit's
# StateDirectory), so the store is /var/lib/nomarr/nomarr.db; the
# models and the ONNX Runtime library are found where the package installs
# them (/usr/share/nomarr/models/musicnn, /usr/lib/nomarr).
#
# To tag a library: set library_root, open it read-write to the service
# (a drop-in with ReadWritePaths=, see /usr/share/doc/nomarr/README.Debian),
# then: systemctl enable --now nomarr
`

// width is the widest comment line.
const width = 76

func main() {
	w := bufio.NewWriter(os.Stdout)
	if err := write(w); err != nil {
		fmt.Fprintln(os.Stderr, "configyaml:", err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "configyaml:", err)
		os.Exit(1)
	}
}

// write renders the whole file.
func write(w io.Writer) error {
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	fmt.Fprint(w, "\n## Application\n")
	for _, k := range config.AppKeys() {
		shown := k.Shown
		if shown == "" {
			shown = "`" + k.Default + "`"
		}
		writeKey(w, k.Name, k.Default, shown)
	}
	fmt.Fprint(w, "\n## Worker system\n")
	values := config.Defaults().Values()
	for _, k := range config.Keys() {
		writeKey(w, k, shortDuration(values[k]), "")
	}
	return nil
}

// writeKey writes one key: its meaning as comment lines, with shown (the
// default in words) when the key has no literal default, then the key
// commented out at its default (with no value when it has none).
func writeKey(w io.Writer, key, def, shown string) {
	text := plain(config.Meaning(key))
	if def == "" && shown != "" {
		text += " Default: " + plain(shown) + "."
	}
	fmt.Fprintln(w)
	for _, line := range wrap(text, width-2) {
		fmt.Fprintln(w, "# "+line)
	}
	if def == "" {
		fmt.Fprintf(w, "#%s:\n", key)
		return
	}
	fmt.Fprintf(w, "#%s: %s\n", key, quote(def))
}

var link = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// plain turns the reference's Markdown into comment text: a link becomes
// the page it names in the project's docs/ (its target is relative to it).
func plain(md string) string {
	return link.ReplaceAllString(md, "docs/$1")
}

// wrap breaks text into lines of at most n characters at spaces (a word
// longer than n stands on a line of its own).
func wrap(text string, n int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= n:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// quote writes a default as a YAML scalar that reads back as the same
// text (config.ReadFile keeps a scalar's source text): plain where YAML
// would not take it for something else, double-quoted otherwise.
func quote(v string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./-][A-Za-z0-9_.:/-]*$`).MatchString(v) && !strings.Contains(v, ": ") {
		return v
	}
	return fmt.Sprintf("%q", v)
}

// shortDuration writes a duration's text without its zero tail (1m, not
// 1m0s; 168h, not 168h0m0s), as the configuration reference does.
func shortDuration(v string) string {
	if strings.HasSuffix(v, "m0s") {
		v = strings.TrimSuffix(v, "0s")
	}
	if strings.HasSuffix(v, "h0m") {
		v = strings.TrimSuffix(v, "0m")
	}
	return v
}
