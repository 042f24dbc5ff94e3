package chainplan

import (
	"fmt"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// fileLayers is the order of the package's own files, lowest first: a file uses the
// declarations of files of lower layers only, never of its own layer nor of a higher one.
// So the model reads from the bottom up (sizes and errors, then the chain and the
// operations, then the rules and parts built on them, then the readers of whole documents)
// and no file needs one above it to make sense.
var fileLayers = [][]string{
	{"bytesize.go", "doc.go", "input.go", "version.go"}, // sizes, input files: standard library only
	{"errors.go"}, // the sentinels and the errors every family shares
	{"chain.go", "document.go", "limits.go", "ops.go"},                              // the chain model, JSON reading rules, table limits, operations
	{"exact.go", "format.go", "multichainplan.go", "offload.go", "replaystates.go"}, // v2 stage rules, format tags, the plan's parts, its RNG states
	{"chainread.go", "schedule.go"},                                                 // the chain reader, the plan document and its reader
	{"multichain.go"},                                                               // the bundle of towers, read branch by branch as chains
}

// TestRootFilesAreLayered type-checks the package and fails on any use of a declaration of
// another file of this package that is not in a lower layer of fileLayers, and on a file the
// table does not place. A use that runs back up is a sign that a definition sits in the
// wrong file: move it to the file that owns its concept, or below both.
func TestRootFilesAreLayered(t *testing.T) {
	layer := map[string]int{}
	for i, files := range fileLayers {
		for _, f := range files {
			layer[f] = i
		}
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading the package: %v", pkgs)
	}
	pkg := pkgs[0]
	var bad []string
	for _, f := range pkg.Syntax {
		name := filepath.Base(pkg.Fset.File(f.Pos()).Name())
		if _, ok := layer[name]; !ok {
			bad = append(bad, fmt.Sprintf("%s: not in fileLayers (place it in the layer of what it uses)", name))
		}
	}
	for _, u := range fileUses(pkg) {
		from, to := layer[u.from], layer[u.to]
		_, known := layer[u.to]
		if known && to >= from {
			bad = append(bad, fmt.Sprintf("%s (layer %d) uses %s of %s (layer %d)", u.from, from+1,
				strings.Join(u.names, ", "), u.to, to+1))
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// fileUse is the declarations of file to that file from names.
type fileUse struct {
	from, to string
	names    []string
}

// fileUses lists, for every pair of files of pkg, the package-level declarations (and the
// methods and fields of its types) that one uses of the other.
func fileUses(pkg *packages.Package) []fileUse {
	uses := map[[2]string]map[string]bool{}
	for id, obj := range pkg.TypesInfo.Uses {
		if obj.Pkg() != pkg.Types || !declaredAtTop(pkg.Types, obj) {
			continue
		}
		from := filepath.Base(pkg.Fset.Position(id.Pos()).Filename)
		to := filepath.Base(pkg.Fset.Position(obj.Pos()).Filename)
		if from == to || strings.HasSuffix(from, "_test.go") {
			continue
		}
		k := [2]string{from, to}
		if uses[k] == nil {
			uses[k] = map[string]bool{}
		}
		uses[k][obj.Name()] = true
	}
	out := make([]fileUse, 0, len(uses))
	for k, names := range uses {
		u := fileUse{from: k[0], to: k[1]}
		for n := range names {
			u.names = append(u.names, n)
		}
		sort.Strings(u.names)
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b fileUse) int { return strings.Compare(a.from+" "+a.to, b.from+" "+b.to) })
	return out
}

// declaredAtTop reports whether obj is a package-level declaration, or a method or field of
// one: what a file can only get from the file that declares it.
func declaredAtTop(p *types.Package, obj types.Object) bool {
	if obj.Parent() == p.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}
