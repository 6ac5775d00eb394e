// Package core_test holds the architecture test of docs/design.md §1: the core is
// pure. It parses every non-test Go file under core/ (go/parser, not grep)
// and fails, naming file:line, on
//
//   - an import of an I/O package: os, os/..., net, net/..., database/sql...,
//     syscall, golang.org/x/sys/..., io/ioutil, plugin, crypto/rand, "C";
//   - a use of the real clock: time.Now, Sleep, After, Tick, NewTimer,
//     NewTicker, AfterFunc, Since, Until (called or taken as a value), a dot
//     import of time, or clock.New from github.com/benbjohnson/clock;
//   - a use of global randomness: the top-level functions of math/rand and
//     math/rand/v2 other than the constructors of an explicit source;
//   - a go statement;
//   - an import of a package of this module outside core/ (sim, adapters,
//     cmd, config, …): the core depends on nothing but itself.
//
// Since every file under core/ is checked for its module imports, a
// transitive dependency on sim/, adapters/, cmd/ or config/ is impossible
// too: the only module packages the core may reach are core packages, and
// they are checked by the same rules.
package core_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/nomarr/nomarr"

// forbiddenImport reports why path may not be imported by the core, or "".
func forbiddenImport(path string) string {
	under := func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") }
	switch {
	case under("os/signal"):
		return "signal handling"
	case under("os"):
		return "process/file-system I/O"
	case under("net"):
		return "network I/O"
	case under("database/sql"):
		return "database I/O"
	case under("syscall"), under("golang.org/x/sys"):
		return "system calls"
	case path == "io/ioutil":
		return "file-system I/O"
	case path == "plugin":
		return "dynamic loading"
	case path == "C":
		return "cgo"
	case path == "crypto/rand":
		return "unseeded randomness (inject a seeded source)"
	case under(module + "/core"):
		return ""
	case path == module || strings.HasPrefix(path, module+"/"):
		return "the core must not depend on " + strings.TrimPrefix(path, module+"/") + " (only on core/...)"
	}
	return ""
}

// forbiddenTime lists the package-level identifiers of time that read or
// wait on the real clock.
var forbiddenTime = []string{"Now", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc", "Since", "Until"}

// randConstructors are the functions of math/rand(/v2) that build an
// explicit source instead of using the global one.
var randConstructors = []string{"New", "NewSource", "NewPCG", "NewChaCha8", "NewZipf"}

// Offence is one rule broken at one place.
type Offence struct {
	Pos  token.Position
	What string
}

func (o Offence) String() string { return fmt.Sprintf("%s:%d: %s", o.Pos.Filename, o.Pos.Line, o.What) }

// checkFile applies the rules to one parsed file.
func checkFile(fset *token.FileSet, f *ast.File) []Offence {
	var out []Offence
	report := func(p token.Pos, format string, a ...any) {
		out = append(out, Offence{Pos: fset.Position(p), What: fmt.Sprintf(format, a...)})
	}
	// local package name → import path, for the packages whose members we
	// inspect.
	watched := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			report(imp.Pos(), "unreadable import %s", imp.Path.Value)
			continue
		}
		if why := forbiddenImport(path); why != "" {
			report(imp.Pos(), "imports %q: %s", path, why)
		}
		switch path {
		case "time", "math/rand", "math/rand/v2", "github.com/benbjohnson/clock":
		default:
			continue
		}
		name := pkgName(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
			continue
		case ".":
			report(imp.Pos(), "dot-imports %q: its clock or random functions could not be told apart", path)
			continue
		}
		watched[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), "go statement: the core starts no goroutines")
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			// id.Obj is nil for a package name; a local variable or
			// parameter that shadows it resolves to its declaration.
			if !ok || id.Obj != nil {
				return true
			}
			path, ok := watched[id.Name]
			if !ok {
				return true
			}
			sel := n.Sel.Name
			switch path {
			case "time":
				if slices.Contains(forbiddenTime, sel) {
					report(n.Pos(), "uses time.%s: time enters the core only through an injected clock or a now argument", sel)
				}
			case "math/rand", "math/rand/v2":
				if ast.IsExported(sel) && !slices.Contains(randConstructors, sel) && !isType(path, sel) {
					report(n.Pos(), "uses %s.%s: the global random source; inject a seeded source", path, sel)
				}
			case "github.com/benbjohnson/clock":
				if sel == "New" {
					report(n.Pos(), "uses clock.New: the real clock; take a clock.Clock as a parameter")
				}
			}
		}
		return true
	})
	return out
}

// isType reports whether sel names a type (not a function) of math/rand(/v2).
func isType(path, sel string) bool {
	switch sel {
	case "Rand", "Source", "Source64", "Zipf", "PCG", "ChaCha8":
		return true
	}
	return false
}

func pkgName(path string) string {
	if path == "math/rand/v2" {
		return "rand"
	}
	return path[strings.LastIndex(path, "/")+1:]
}

// checkSource parses and checks one file's text.
func checkSource(name, src string) ([]Offence, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	return checkFile(fset, f), nil
}

// checkTree checks every non-test .go file under root, skipping the
// directories the go tool ignores (testdata, _*, .*).
func checkTree(root string) (files int, offences []Offence, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		// Every file counts, whatever its build constraints.
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files++
		offences = append(offences, checkFile(fset, f)...)
		return nil
	})
	return files, offences, err
}

func TestCoreIsPure(t *testing.T) {
	// The test runs in core/.
	files, offences, err := checkTree(".")
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("walked only %d non-test files under core/: is the test running in core/?", files)
	}
	if len(offences) > 0 {
		var b strings.Builder
		for _, o := range offences {
			fmt.Fprintf(&b, "\n  core/%s", o)
		}
		t.Fatalf("the core must stay pure (docs/design.md §1): %d offence(s) in %d files:%s", len(offences), files, b.String())
	}
	t.Logf("%d files under core/ checked, no offence", files)
}

// TestCheckerCatchesViolations proves that each rule fires, and that the
// allowed forms do not.
func TestCheckerCatchesViolations(t *testing.T) {
	src := `package bad

import (
	"fmt"
	"os/exec"
	"net/http"
	"os"
	"database/sql"
	"syscall"
	"os/signal"
	tm "time"
	"time"
	"math/rand/v2"
	"github.com/nomarr/nomarr/sim"
	"github.com/nomarr/nomarr/config"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/cmd/nomarr"
	"github.com/nomarr/nomarr/core/restart"
)

func f(clock interface{ Now() tm.Time }) {
	go func() {}()
	_ = time.Now()
	_ = tm.Since(tm.Time{})
	time.Sleep(time.Second)
	<-time.After(time.Second)
	now := time.Now // a method value is a use too
	_ = now
	_ = rand.IntN(3)
	_ = rand.New(rand.NewPCG(1, 2)).IntN(3) // explicit seeded source: allowed
	_ = clock.Now()                        // injected clock: allowed
	var d time.Duration = 5 * time.Second  // allowed
	fmt.Println(d, exec.Command, http.Get, os.Args, sql.Open, syscall.Getpid, signal.Notify, sim.Run, config.Defaults, sqlite.Open, nomarr.X, restart.Config{})
}

func g(time struct{ Now func() int }) int { return time.Now() } // a shadowing parameter: allowed
`
	got, err := checkSource("bad.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, o := range got {
		lines = append(lines, o.String())
	}
	all := strings.Join(lines, "\n")
	t.Logf("offences found:\n%s", all)
	want := []string{
		`bad.go:5: imports "os/exec"`,
		`bad.go:6: imports "net/http"`,
		`bad.go:7: imports "os"`,
		`bad.go:8: imports "database/sql"`,
		`bad.go:9: imports "syscall"`,
		`bad.go:10: imports "os/signal"`,
		`bad.go:14: imports "github.com/nomarr/nomarr/sim"`,
		`bad.go:15: imports "github.com/nomarr/nomarr/config"`,
		`bad.go:16: imports "github.com/nomarr/nomarr/adapters/sqlite"`,
		`bad.go:17: imports "github.com/nomarr/nomarr/cmd/nomarr"`,
		`bad.go:22: go statement`,
		`bad.go:23: uses time.Now`,
		`bad.go:24: uses time.Since`, // through the alias tm
		`bad.go:25: uses time.Sleep`,
		`bad.go:26: uses time.After`,
		`bad.go:27: uses time.Now`,
		`bad.go:29: uses math/rand/v2.IntN`,
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("checker missed %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("checker found %d offences, want exactly %d (no false positives)", len(got), len(want))
	}
	for _, notWant := range []string{"bad.go:18:", "bad.go:30:", "bad.go:31:", "bad.go:32:", "bad.go:36:"} {
		if strings.Contains(all, notWant) {
			t.Errorf("false positive at %s", notWant)
		}
	}
}

func TestCheckerMinimal(t *testing.T) {
	// The three examples named in the brief, one at a time.
	for _, tc := range []struct{ src, want string }{
		{"package p\nfunc f() { go func(){}() }\n", "go statement"},
		{"package p\nimport \"time\"\nvar _ = time.Now()\n", "uses time.Now"},
		{"package p\nimport _ \"os/exec\"\n", `imports "os/exec"`},
		{"package p\nimport . \"time\"\nvar _ = Now()\n", `dot-imports "time"`},
		{"package p\nimport \"github.com/benbjohnson/clock\"\nvar _ = clock.New()\n", "uses clock.New"},
	} {
		got, err := checkSource("x.go", tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !strings.Contains(got[0].What, tc.want) {
			t.Errorf("%q: got %v, want one offence %q", tc.src, got, tc.want)
		}
	}
	if got, _ := checkSource("ok.go", "package p\nimport \"time\"\nfunc f(now time.Time) time.Time { return now.Add(time.Second) }\n"); len(got) != 0 {
		t.Errorf("pure file flagged: %v", got)
	}
}

// TestCheckTreeNamesFiles proves that the walk reports file:line, skips test
// files and testdata, and reads files whatever their build constraints.
func TestCheckTreeNamesFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\n\nimport \"time\"\n\nfunc F() { time.Sleep(1) }\n")
	write("a/b_linux.go", "//go:build ignore\n\npackage a\n\nimport \"net\"\n\nvar _ = net.Dial\n")
	write("a/a_test.go", "package a\n\nimport \"os\"\n\nvar _ = os.Args\n")
	write("a/testdata/x.go", "package x\n\nfunc f() { go f() }\n")
	files, got, err := checkTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 || len(got) != 2 {
		t.Fatalf("got %d files, offences %v; want 2 files, 2 offences", files, got)
	}
	rel := func(o Offence) string {
		r, _ := filepath.Rel(dir, o.Pos.Filename)
		return fmt.Sprintf("%s:%d", filepath.ToSlash(r), o.Pos.Line)
	}
	if rel(got[0]) != "a/a.go:5" || rel(got[1]) != "a/b_linux.go:5" {
		t.Errorf("got %s and %s, want a/a.go:5 and a/b_linux.go:5", rel(got[0]), rel(got[1]))
	}
}

// TestStorePortWrappedOnce holds the store port (core/store.Store) to one
// hand-written forwarding layer, store.Wrap: a wrapper of the port
// (reconnecting, watching, partitioning, locking) is an Around given to
// Wrap, so that a new port method is spelled out in the port, its
// implementations, Wrap and the contract suite, and nowhere else.
//
// The rule: it parses every Go file of the module, tests included (go/parser,
// directories the go tool ignores skipped), and fails, naming the type, when
// a type declares methods named as more than storePortMaxMethods of the
// port's methods, except the implementations in storePortImplementations.
// The port's method names come from parsing core/store (the Store
// interface, its embedded interfaces expanded), so a new method counts at
// once. It counts names, not bodies: a forwarding method is caught however
// it calls through, and a stand-in store written from scratch outside the
// adapters is refused as well. A type that embeds other types of its
// package counts their methods too, so a forwarder cut into small embedded
// pieces adds up. A test double that embeds the port and overrides a few
// calls (the tests' usual way to inject a fault) stays within the bound.
func TestStorePortWrappedOnce(t *testing.T) {
	names, err := storePortMethods(filepath.Join("store"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("found only %d methods of store.Store: is the test running in core/?", len(names))
	}
	over, types, err := storePortOverreach("..", names)
	if err != nil {
		t.Fatal(err)
	}
	if types < 100 {
		t.Fatalf("saw only %d types with methods under the module root: is the test running in core/?", types)
	}
	for _, impl := range storePortImplementations {
		if _, ok := over[impl]; !ok {
			t.Errorf("%s no longer declares the port's methods: is the list of implementations stale?", impl)
		}
		delete(over, impl)
	}
	var offenders []string
	for typ := range over {
		offenders = append(offenders, typ)
	}
	slices.Sort(offenders)
	for _, typ := range offenders {
		t.Errorf("%s declares %d of the store port's methods (at most %d outside the implementations): wrap the port with store.Wrap instead",
			typ, over[typ], storePortMaxMethods)
	}
}

// storePortMaxMethods is how many of the port's methods a type outside
// storePortImplementations may declare.
const storePortMaxMethods = 3

// storePortImplementations are the types, as directory.Type from the module
// root, that spell out the port: the stores and Wrap's forwarder.
var storePortImplementations = []string{
	"adapters/sqlite.Store",
	"adapters/arangodb.Store",
	"adapters/memstore.Store",
	"core/store.wrapped",
}

// storePortMethods parses the package in dir and returns the method names of
// its Store interface, embedded interfaces of the package expanded.
func storePortMethods(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	ifaces := map[string]*ast.InterfaceType{}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					if it, ok := ts.Type.(*ast.InterfaceType); ok {
						ifaces[ts.Name.Name] = it
					}
				}
			}
		}
	}
	names := map[string]bool{}
	var add func(name string) error
	add = func(name string) error {
		it, ok := ifaces[name]
		if !ok {
			return fmt.Errorf("%s: no interface %s", dir, name)
		}
		for _, m := range it.Methods.List {
			switch x := m.Type.(type) {
			case *ast.FuncType:
				for _, n := range m.Names {
					names[n.Name] = true
				}
			case *ast.Ident:
				if err := add(x.Name); err != nil {
					return err
				}
			default:
				return fmt.Errorf("%s: %s embeds %T, which this test cannot expand", dir, name, x)
			}
		}
		return nil
	}
	return names, add("Store")
}

// storePortOverreach walks the Go files under root and returns the types
// (directory.Type, the directory relative to root) that declare, themselves
// or through embedded types of their package, more than
// storePortMaxMethods methods named in names; and how many types with
// methods it saw.
func storePortOverreach(root string, names map[string]bool) (map[string]int, int, error) {
	own := map[string]int{}           // dir.Type -> port methods it declares
	embeds := map[string][]string{}   // dir.Type -> dir.Type of the local types it embeds
	withMethods := map[string]bool{}  // dir.Type of every receiver seen
	base := func(e ast.Expr) string { // a receiver's or embedded field's local type name, or ""
		for {
			switch x := e.(type) {
			case *ast.StarExpr:
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.IndexListExpr:
				e = x.X
			case *ast.Ident:
				return x.Name
			default:
				return ""
			}
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel) + "."
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					continue
				}
				typ := pkg + base(d.Recv.List[0].Type)
				withMethods[typ] = true
				if names[d.Name.Name] {
					own[typ]++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						if len(field.Names) == 0 {
							if b := base(field.Type); b != "" {
								embeds[pkg+ts.Name.Name] = append(embeds[pkg+ts.Name.Name], pkg+b)
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	var total func(typ string, seen map[string]bool) int
	total = func(typ string, seen map[string]bool) int {
		if seen[typ] {
			return 0
		}
		seen[typ] = true
		n := own[typ]
		for _, e := range embeds[typ] {
			n += total(e, seen)
		}
		return n
	}
	over := map[string]int{}
	for typ := range withMethods {
		if n := total(typ, map[string]bool{}); n > storePortMaxMethods {
			over[typ] = n
		}
	}
	for typ := range embeds {
		if n := total(typ, map[string]bool{}); n > storePortMaxMethods {
			over[typ] = n
		}
	}
	return over, len(withMethods), nil
}

// TestStorePortOverreachCounts proves the rule of TestStorePortWrappedOnce
// on a small tree: a forwarder of four methods, and one cut into two
// embedded pieces of two, are caught; an override of three, and methods
// named as the port's on unrelated types of other packages, are not.
func TestStorePortOverreachCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", `package a
type whole struct{ s S }
func (w whole) A() { w.s.A() }
func (w *whole) B() { w.s.B() }
func (w whole) C() { w.s.C() }
func (w whole) D() { w.s.D() }
type few struct{ S }
func (f few) A() {}
func (f few) B() {}
func (f few) C() {}
`)
	write("a/split_test.go", `package a
type half1 struct{}
func (half1) A() {}
func (half1) B() {}
type half2[T any] struct{}
func (half2[T]) C() {}
func (*half2[T]) D() {}
type joined struct{ half1; *half2[int] }
`)
	write("b/b.go", "package b\ntype x struct{}\nfunc (x) A() {}\nfunc (x) B() {}\ntype y struct{}\nfunc (y) C() {}\nfunc (y) D() {}\n")
	write("a/testdata/t.go", "package t\ntype z struct{}\nfunc (z) A() {}\nfunc (z) B() {}\nfunc (z) C() {}\nfunc (z) D() {}\n")
	names := map[string]bool{"A": true, "B": true, "C": true, "D": true}
	over, _, err := storePortOverreach(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a.whole": 4, "a.joined": 4}
	if fmt.Sprint(over) != fmt.Sprint(want) { // fmt prints maps in key order
		t.Fatalf("over the bound: %v, want %v", over, want)
	}
}

// The application layer's rules (docs/design.md §1: cmd/ parses flags and prints,
// app/ composes): every goroutine of a run is started, stopped and
// supervised in app/ (app/service), so no non-test file under cmd/ holds a
// go statement; and the application never depends on the simulator, so no
// file under app/ imports sim or a package under it. Both are checked on
// the parsed files (go/parser), naming file:line.

// layerOffences parses the Go files under root (test files too when
// withTests; testdata skipped) and returns, as "path:line: what", what
// check reports of each.
func layerOffences(t *testing.T, root string, withTests bool, check func(fset *token.FileSet, f *ast.File) []string) (files int, offences []string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!withTests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		offences = append(offences, check(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, offences
}

// goStatements reports every go statement of f.
func goStatements(fset *token.FileSet, f *ast.File) (out []string) {
	ast.Inspect(f, func(n ast.Node) bool {
		if g, ok := n.(*ast.GoStmt); ok {
			out = append(out, fmt.Sprintf("%s: go statement", fset.Position(g.Go)))
		}
		return true
	})
	return out
}

// simImports reports every import of sim or of a package under it.
func simImports(fset *token.FileSet, f *ast.File) (out []string) {
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p == module+"/sim" || strings.HasPrefix(p, module+"/sim/") {
			out = append(out, fmt.Sprintf("%s: imports %s", fset.Position(imp.Pos()), p))
		}
	}
	return out
}

func TestCmdStartsNoGoroutine(t *testing.T) {
	files, offences := layerOffences(t, filepath.Join("..", "cmd"), false, goStatements)
	if files < 10 {
		t.Fatalf("walked only %d non-test files under cmd/: is the test running in core/?", files)
	}
	if len(offences) > 0 {
		t.Fatalf("cmd/ parses flags and prints; its goroutines belong to app/ (app/service):\n  %s", strings.Join(offences, "\n  "))
	}
}

func TestAppNeverImportsSim(t *testing.T) {
	files, offences := layerOffences(t, filepath.Join("..", "app"), true, simImports)
	if files < 10 {
		t.Fatalf("walked only %d files under app/: is the test running in core/?", files)
	}
	if len(offences) > 0 {
		t.Fatalf("the application must not depend on the simulator:\n  %s", strings.Join(offences, "\n  "))
	}
}

// TestLayerChecksFire proves that both checks see what they look for, and
// nothing else.
func TestLayerChecksFire(t *testing.T) {
	dir := t.TempDir()
	src := map[string]string{
		"a.go":          "package a\n\nimport (\n\t\"fmt\"\n\t\"github.com/nomarr/nomarr/sim/scripted\"\n)\n\nfunc F() {\n\tgo fmt.Println()\n\tgo func() {}()\n}\n\nvar _ = scripted.NewScript\n",
		"b.go":          "package a\n\nimport s \"github.com/nomarr/nomarr/sim\"\n\nvar _ = s.Load\n",
		"c.go":          "package a\n\nimport \"github.com/nomarr/nomarr/simulated\"\n\n// go f() in a comment\nvar _ = simulated.X\n",
		"a_test.go":     "package a\n\nfunc g() { go g() }\n",
		"testdata/x.go": "package x\n\nfunc f() { go f() }\n",
	}
	for name, body := range src {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if files, got := layerOffences(t, dir, false, goStatements); files != 3 || len(got) != 2 ||
		!strings.HasSuffix(got[0], "a.go:9:2: go statement") || !strings.HasSuffix(got[1], "a.go:10:2: go statement") {
		t.Errorf("go statements: %d files, %q; want 3 files and a.go:9 and a.go:10", files, got)
	}
	if files, got := layerOffences(t, dir, true, goStatements); files != 4 || len(got) != 3 {
		t.Errorf("go statements with the tests: %d files, %q; want 4 files and 3 offences", files, got)
	}
	if _, got := layerOffences(t, dir, true, simImports); len(got) != 2 ||
		!strings.Contains(got[0], "imports github.com/nomarr/nomarr/sim/scripted") || !strings.Contains(got[1], "imports github.com/nomarr/nomarr/sim") {
		t.Errorf("sim imports: %q; want a.go's sim/scripted and b.go's sim", got)
	}
}
