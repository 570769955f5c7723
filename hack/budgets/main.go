// Command budgets holds the repository's size and complexity budgets, the
// ones docs/style.md states: lines per file and per function (counted as
// /work/shared/tools/gostat counts them: a file's newlines; a function from
// its func keyword to its closing brace), cognitive complexity per function
// (github.com/uudashr/gocognit, the measure golangci-lint's gocognit uses)
// and the complexity of nested if statements (github.com/nakabonne/nestif,
// golangci-lint's nestif). Test files, generated files ("Code generated ...
// DO NOT EDIT"), vendor/, testdata/, node_modules/ and dot directories are
// left out.
//
// Usage: budgets [flags] DIR. It prints every item over a budget and a
// summary line, and exits 1 when anything is over (2 on a usage error).
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nakabonne/nestif"
	"github.com/uudashr/gocognit"
)

// Budgets are the limits; an item equal to its limit is within it.
type Budgets struct {
	FileLines int // lines per non-test file
	FuncLines int // lines per function
	Cognitive int // gocognit complexity per function
	NestedIf  int // nestif complexity per outermost if statement
}

// Report is what Measure found.
type Report struct {
	Files, Funcs, Lines int
	MedianFunc          int
	Over                []string // one line per item over a budget
}

func main() {
	b := Budgets{}
	flag.IntVar(&b.FileLines, "max-file-lines", 800, "lines per file")
	flag.IntVar(&b.FuncLines, "max-func-lines", 80, "lines per function")
	flag.IntVar(&b.Cognitive, "max-cognitive", 30, "cognitive complexity per function (gocognit)")
	flag.IntVar(&b.NestedIf, "max-nested-if", 6, "complexity of one nested if statement (nestif)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: budgets [flags] DIR")
		os.Exit(2)
	}
	r, err := Measure(flag.Arg(0), b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "budgets:", err)
		os.Exit(2)
	}
	for _, o := range r.Over {
		fmt.Println(o)
	}
	fmt.Printf("budgets: files=%d lines=%d funcs=%d median_func=%d over_budget=%d (file<=%d func<=%d lines, cognitive<=%d, nested-if<=%d)\n",
		r.Files, r.Lines, r.Funcs, r.MedianFunc, len(r.Over), b.FileLines, b.FuncLines, b.Cognitive, b.NestedIf)
	if len(r.Over) > 0 {
		fmt.Println("budgets: split what is listed above (a helper per step or per case) and run `make budgets` before landing")
		os.Exit(1)
	}
}

// Measure walks root and checks every Go source file against b. Files that
// do not parse are an error (the compiler would refuse them too).
func Measure(root string, b Budgets) (*Report, error) {
	r := &Report{}
	var funcLines []int
	fset := token.NewFileSet()
	nest := &nestif.Checker{MinComplexity: b.NestedIf + 1}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(d.Name()) && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil || isGenerated(src) {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		lines := strings.Count(string(src), "\n")
		r.Files++
		r.Lines += lines
		if lines > b.FileLines {
			r.Over = append(r.Over, fmt.Sprintf("file over %d lines: %s %d", b.FileLines, rel, lines))
		}
		funcLines = append(funcLines, r.checkFuncs(fset, f, rel, b)...)
		for _, is := range nest.Check(f, fset) {
			r.Over = append(r.Over, fmt.Sprintf("nested if over %d: %s:%d %d", b.NestedIf, rel, is.Pos.Line, is.Complexity))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Funcs = len(funcLines)
	if len(funcLines) > 0 {
		sort.Ints(funcLines)
		r.MedianFunc = funcLines[len(funcLines)/2]
	}
	return r, nil
}

// checkFuncs records the functions of f over the line or cognitive budget
// and returns every function's length.
func (r *Report) checkFuncs(fset *token.FileSet, f *ast.File, rel string, b Budgets) []int {
	var out []int
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		out = append(out, n)
		if n > b.FuncLines {
			r.Over = append(r.Over, fmt.Sprintf("func over %d lines: %s:%s %d", b.FuncLines, rel, fd.Name.Name, n))
		}
		if c := gocognit.Complexity(fd); c > b.Cognitive {
			r.Over = append(r.Over, fmt.Sprintf("func over cognitive %d: %s:%s %d", b.Cognitive, rel, fd.Name.Name, c))
		}
	}
	return out
}

func skipDir(name string) bool {
	return name == "vendor" || name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")
}

// isGenerated reports the Go convention's marker in the first 2000 bytes.
func isGenerated(src []byte) bool {
	head := string(src)
	if len(head) > 2000 {
		head = head[:2000]
	}
	return strings.Contains(head, "Code generated") && strings.Contains(head, "DO NOT EDIT")
}
