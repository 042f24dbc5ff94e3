package planner_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/chainplan/chainplan/planner"
)

// The guide's glossary (docs/ARCHITECTURE.md, "Glossary") says that in the pipeline family
// a stage is a group of consecutive layers on one device and a chain's element is a layer.
// These tests hold the family to it: the glossary lists every package of the family, and
// the family's code calls a chain's element a layer and a device group a stage.

const modulePath = "github.com/chainplan/chainplan"

// glossaryPaths returns the paths of the glossary's table of the pipeline family.
func glossaryPaths(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range tableRows(t, guideSection(t, "Glossary"), "| where | what |") {
		for _, p := range strings.Split(r[0], ",") {
			if p = strings.Trim(strings.TrimSpace(p), "`"); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// registryFamilyPackages returns the packages under planner/ and pipeplan/ (the registry
// itself apart) whose non-test files spell, as a string literal, the name or the plan
// format of a registry entry of the pipeline, simulation or parallel family: the family's
// planners and its contract.
func registryFamilyPackages(t *testing.T) []string {
	t.Helper()
	words := map[string]bool{}
	for _, e := range planner.Entries() {
		switch e.Family {
		case planner.Pipeline, planner.Simulation, planner.Parallel:
			words[e.Name], words[e.Format] = true, true
		}
	}
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, root := range []string{"../planner", "../pipeplan"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			dir := filepath.ToSlash(strings.TrimPrefix(filepath.Dir(path), "../"))
			if dir == "planner" || strings.Contains(dir, "/testdata") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			if len(spelt(f, words)) > 0 {
				found[dir] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := make([]string, 0, len(found))
	for d := range found {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func TestGlossaryListsThePipelineFamily(t *testing.T) {
	listed := glossaryPaths(t)
	family := registryFamilyPackages(t)
	// The registry's pipeline, simulation and parallel entries live in these; finding
	// fewer means the derivation broke, not that the family shrank.
	for _, want := range []string{"pipeplan", "planner/madpipe", "planner/pipesim", "planner/amp"} {
		if !slices.Contains(family, want) {
			t.Fatalf("the registry's pipeline family was read as %q, without %s", family, want)
		}
	}
	for _, p := range family {
		if !slices.Contains(listed, p) {
			t.Errorf("%s spells a pipeline, simulation or parallel entry of the registry, and docs/ARCHITECTURE.md's "+
				"glossary does not list it in the pipeline family", p)
		}
	}
	for _, p := range listed {
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			t.Errorf("the glossary lists %s, which does not exist: %v", p, err)
		}
	}
}

// A finding is a name or comment of the pipeline family that breaks the glossary.
type finding struct {
	pos token.Position
	msg string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s", filepath.ToSlash(f.pos.Filename), f.pos.Line, f.msg)
}

var (
	// stageWord is a name that says stage.
	stageWord = regexp.MustCompile(`(?i)stage`)
	// elementAsStage is prose that calls a chain's element a stage.
	elementAsStage = regexp.MustCompile(`(?i)\bstages?\s+(ℓ|l\b)|\bstages?\s+of\s+the\s+chain\b|` +
		`\bchain\s+stages?\b|\bdeclared\s+stages\b|\bthe\s+chain's\s+stages?\b`)
	// pythonOtherWord is a Python class named for a device group with another word.
	pythonOtherWord = regexp.MustCompile(`(?m)^\s*class\s+\w*(Part|Segment|Block|Chunk)s?\b`)
)

// otherWord reports whether name has a word (camelCase or snake_case) that calls a stage
// something else.
func otherWord(name string) bool {
	var words []string
	start := 0
	for i, r := range name {
		if r == '_' || i > 0 && r >= 'A' && r <= 'Z' && name[i-1] >= 'a' && name[i-1] <= 'z' {
			words = append(words, name[start:i])
			start = i
		}
	}
	words = append(words, name[start:])
	for _, w := range words {
		switch strings.ToLower(strings.Trim(w, "_")) {
		case "part", "parts", "segment", "segments", "block", "blocks", "chunk", "chunks":
			return true
		}
	}
	return false
}

// named returns the named type under pointers, slices and arrays of t, and whether it
// was under a slice or array.
func named(t types.Type) (n *types.Named, many bool) {
	for {
		switch u := t.(type) {
		case *types.Pointer:
			t = u.Elem()
		case *types.Slice:
			t, many = u.Elem(), true
		case *types.Array:
			t, many = u.Elem(), true
		case *types.Alias:
			t = types.Unalias(u)
		case *types.Named:
			return u, many
		default:
			return nil, many
		}
	}
}

// is reports whether t is pkg.name (under pointers and slices), and under a slice.
func is(t types.Type, pkg, name string) (ok, many bool) {
	n, many := named(t)
	if n == nil || n.Obj().Pkg() == nil {
		return false, false
	}
	return n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name, many
}

func chainElement(t types.Type) (ok, many bool) { return is(t, modulePath, "Stage") }
func pipelineStage(t types.Type) (ok, many bool) {
	return is(t, modulePath+"/pipeplan", "Stage")
}

// countsLayers reports whether e counts or indexes a chain's elements: len of a slice of
// chainplan.Stage, or a call of a method named L or NumLayers (pipeline.Problem.L).
func countsLayers(info *types.Info, e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		switch fn := ast.Unparen(call.Fun).(type) {
		case *ast.Ident:
			if _, builtin := info.Uses[fn].(*types.Builtin); builtin && fn.Name == "len" && len(call.Args) == 1 {
				if ok, _ := chainElement(info.TypeOf(call.Args[0])); ok {
					found = true
				}
			}
		case *ast.SelectorExpr:
			if fn.Sel.Name == "L" || fn.Sel.Name == "NumLayers" {
				if _, method := info.Uses[fn.Sel].(*types.Func); method {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// scanNames returns the names in file that break the glossary, from its type information.
func scanNames(fset *token.FileSet, info *types.Info, file *ast.File) []finding {
	var out []finding
	at := func(n ast.Node, format string, args ...any) {
		out = append(out, finding{fset.Position(n.Pos()), fmt.Sprintf(format, args...)})
	}
	checkObject := func(id *ast.Ident, obj types.Object) {
		t := obj.Type()
		if fn, ok := obj.(*types.Func); ok {
			sig := fn.Type().(*types.Signature)
			if sig.Results().Len() != 1 {
				return
			}
			t = sig.Results().At(0).Type()
		}
		if ok, _ := chainElement(t); ok && stageWord.MatchString(id.Name) {
			at(id, "%s is a chain's element (chainplan.Stage), a layer in the pipeline family: call it a layer", id.Name)
		}
		if ok, many := pipelineStage(t); ok {
			switch {
			case otherWord(id.Name):
				at(id, "%s holds a pipeline stage: call it a stage, not a part, segment, block or chunk", id.Name)
			case !many && strings.Contains(strings.ToLower(id.Name), "partition"):
				at(id, "%s is one stage: a partition is the whole split into stages", id.Name)
			}
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if obj := info.Defs[n]; obj != nil {
				switch obj.(type) {
				case *types.Var, *types.Const, *types.Func:
					checkObject(n, obj)
				}
			}
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && stageWord.MatchString(id.Name) && countsLayers(info, n.Rhs[i]) {
						at(id, "%s counts or indexes the chain's elements, the layers: call it a layer count or index", id.Name)
					}
				}
			}
		case *ast.ValueSpec:
			if len(n.Names) == len(n.Values) {
				for i, id := range n.Names {
					if stageWord.MatchString(id.Name) && countsLayers(info, n.Values[i]) {
						at(id, "%s counts or indexes the chain's elements, the layers: call it a layer count or index", id.Name)
					}
				}
			}
		case *ast.RangeStmt:
			if id, ok := n.Key.(*ast.Ident); ok && stageWord.MatchString(id.Name) {
				if ok, many := chainElement(info.TypeOf(n.X)); ok && many || countsLayers(info, n.X) {
					at(id, "%s ranges over the chain's elements, the layers: call it a layer", id.Name)
				}
			}
		}
		return true
	})
	return out
}

// scanComments returns the comments of file that call a chain's element a stage.
func scanComments(fset *token.FileSet, file *ast.File) []finding {
	var out []finding
	for _, g := range file.Comments {
		for _, c := range g.List {
			if m := elementAsStage.FindString(c.Text); m != "" {
				out = append(out, finding{fset.Position(c.Pos()), fmt.Sprintf("%q calls a chain's element a stage: it is a layer here", m)})
			}
		}
	}
	return out
}

// probeFile is a file the scan must refuse, laid over planner/pipeline: the slips the
// glossary forbids, each once.
const probeFile = `package pipeline

import ("github.com/chainplan/chainplan"; "github.com/chainplan/chainplan/pipeplan")

// probe counts stage ℓ of the chain.
func probe(c *chainplan.Chain, pr *Problem, s []pipeplan.Stage) (int, pipeplan.Stage) {
	nStages := len(c.Stages)
	lastStage := pr.L()
	for stage := range c.Stages {
		_ = stage
	}
	firstStage := c.Stages[0]
	var part pipeplan.Stage
	_, _, _ = nStages, lastStage, firstStage
	return len(s), part
}
`

// probeWants are the findings probeFile must give, as "line: name or phrase".
var probeWants = []string{
	`5: "stage ℓ"`, "7: nStages", "8: lastStage", "9: stage", "12: firstStage", "13: part",
}

func TestPipelineFamilyCallsALayerALayer(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(root, "planner", "pipeline", "zz_glossary_probe.go")
	listed := glossaryPaths(t)
	var dirs []string
	files := map[string]bool{} // listed single files, absolute
	for _, p := range listed {
		if !strings.HasSuffix(p, ".go") {
			if !strings.HasPrefix(p, "python/") {
				dirs = append(dirs, p)
			}
			continue
		}
		files[filepath.Join(root, p)] = true
		if d := filepath.Dir(p); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	wholeDir := map[string]bool{}
	patterns := make([]string, 0, len(dirs))
	for _, d := range dirs {
		patterns = append(patterns, "./"+d)
		if !slices.ContainsFunc(listed, func(p string) bool { return strings.HasPrefix(p, d+"/") && strings.HasSuffix(p, ".go") }) {
			wholeDir[filepath.Join(root, d)] = true
		}
	}
	cfg := &packages.Config{
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:     root,
		Overlay: map[string][]byte{probe: []byte(probeFile)},
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	var got []finding
	var probed []string
	for _, pkg := range pkgs {
		for _, e := range pkg.Errors {
			t.Errorf("%s: %v", pkg.PkgPath, e)
		}
		for _, f := range pkg.Syntax {
			name := pkg.Fset.File(f.Pos()).Name()
			if !wholeDir[filepath.Dir(name)] && !files[name] {
				continue
			}
			found := append(scanNames(pkg.Fset, pkg.TypesInfo, f), scanComments(pkg.Fset, f)...)
			if name == probe {
				for _, x := range found {
					probed = append(probed, x.String())
				}
				continue
			}
			got = append(got, found...)
		}
	}
	// The probe proves the scan sees each slip (else a broken scan would pass anything).
	for _, w := range probeWants {
		line, what, _ := strings.Cut(w, ": ")
		if !slices.ContainsFunc(probed, func(p string) bool {
			return strings.Contains(p, "zz_glossary_probe.go:"+line+":") && strings.Contains(p, what)
		}) {
			t.Errorf("the scan missed %s in the probe file; it found %q", w, probed)
		}
	}
	if len(probed) != len(probeWants) {
		t.Errorf("the probe file gave %d findings, want %d: %q", len(probed), len(probeWants), probed)
	}
	// Go tests and Python modules: their prose (and Python's class names) only.
	fset := token.NewFileSet()
	for _, d := range dirs {
		if !wholeDir[filepath.Join(root, d)] {
			continue
		}
		tests, _ := filepath.Glob(filepath.Join(root, d, "*_test.go"))
		for _, path := range tests {
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, scanComments(fset, f)...)
		}
	}
	for _, p := range listed {
		if strings.HasPrefix(p, "python/") {
			got = append(got, scanPython(t, filepath.Join(root, p))...)
		}
	}
	for _, f := range got {
		t.Errorf("%s (docs/ARCHITECTURE.md, Glossary)", strings.TrimPrefix(f.String(), filepath.ToSlash(root)+"/"))
	}
}

// scanPython returns what the Python files at path (a module, or every module under a
// folder) say against the glossary: prose that calls a chain's element a stage, and a
// class named for a stage with another word.
func scanPython(t *testing.T, path string) []finding {
	t.Helper()
	var paths []string
	if strings.HasSuffix(path, ".py") {
		paths = []string{path}
	} else {
		paths, _ = filepath.Glob(filepath.Join(path, "*.py"))
	}
	var out []finding
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			pos := token.Position{Filename: p, Line: i + 1}
			if m := elementAsStage.FindString(line); m != "" {
				out = append(out, finding{pos, fmt.Sprintf("%q calls a chain's element a stage: it is a layer here", m)})
			}
			if pythonOtherWord.MatchString(line) {
				out = append(out, finding{pos, "a class named for a stage with another word: call it a stage"})
			}
		}
	}
	return out
}
