package pybind

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryExportHasAPythonCaller: the bindings are the Python package's and nobody
// else's (the CLI and Go programs call internal/service), so an exported function that
// python/chainplan/_bind.py does not call, or a _bind function that no module of the
// package calls, is dead API that gopy would still build, document and ship.
func TestEveryExportHasAPythonCaller(t *testing.T) {
	fset := token.NewFileSet()
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	bind, err := os.ReadFile(filepath.Join("..", "python", "chainplan", "_bind.py"))
	if err != nil {
		t.Fatal(err)
	}
	exports := 0
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() {
				continue
			}
			exports++
			if !strings.Contains(string(bind), "_go()."+fn.Name.Name+",") && !strings.Contains(string(bind), "_go()."+fn.Name.Name+")") {
				t.Errorf("pybind.%s (%s): no call in python/chainplan/_bind.py; drop it or call it",
					fn.Name.Name, fset.Position(fn.Pos()))
			}
		}
	}
	if exports == 0 {
		t.Fatal("found no exported function in pybind")
	}

	var modules []string // the text of every other module of the package
	root := filepath.Join("..", "python", "chainplan")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") || strings.Contains(path, "_gocore") ||
			filepath.Base(path) == "_bind.py" {
			return err
		}
		b, err := os.ReadFile(path)
		modules = append(modules, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	others := strings.Join(modules, "\n")
	for _, m := range regexp.MustCompile(`(?m)^def ([a-z][a-z0-9_]*)\(`).FindAllStringSubmatch(string(bind), -1) {
		name := m[1]
		inside := regexp.MustCompile(`[^.\w]`+name+`\(`).FindAllStringIndex(string(bind), -1)
		if !strings.Contains(others, "_bind."+name+"(") && len(inside) < 2 { // the def itself is one
			t.Errorf("chainplan._bind.%s: no module of python/chainplan calls it; drop it and its binding", name)
		}
	}
}
