package planner_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner"
)

// The guide (docs/ARCHITECTURE.md) is held to the registry: its table of algorithms, the
// files it says a new planner touches, and the places it says spell an algorithm's name.

const guidePath = "../docs/ARCHITECTURE.md"

// guideSection returns the text of the guide's section titled title (a "## " heading),
// up to the next such heading.
func guideSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("%s has no section %q", guidePath, title)
	}
	rest := text[start+len(title)+5:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// tableRows returns the cells of the markdown table that follows the line starting with
// header, without the header and the rule; backticks are removed.
func tableRows(t *testing.T, section, header string) [][]string {
	t.Helper()
	i := strings.Index(section, header)
	if i < 0 {
		t.Fatalf("no table headed %q in the guide", header)
	}
	var rows [][]string
	for n, line := range strings.Split(section[i:], "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if n < 2 {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.Trim(strings.TrimSpace(c), "`"))
		}
		rows = append(rows, cells)
	}
	return rows
}

func TestGuideListsTheRegistry(t *testing.T) {
	rows := tableRows(t, guideSection(t, "The registry"), "| algorithm | family | plan format |")
	var got, want []string
	for _, r := range rows {
		got = append(got, strings.Join(r[:3], " "))
	}
	for _, e := range planner.Entries() {
		want = append(want, strings.Join([]string{e.Name, string(e.Family), e.Format}, " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/ARCHITECTURE.md's registry table disagrees with planner.Entries():\nguide:    %q\nregistry: %q", got, want)
	}
}

// backticked returns the `quoted` words of text that look like repository paths.
func backticked(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`\\s]+)`").FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "/") || strings.HasSuffix(m[1], ".md") || strings.HasSuffix(m[1], ".go") {
			out = append(out, m[1])
		}
	}
	return out
}

func TestGuideFilesExist(t *testing.T) {
	section := guideSection(t, "How to add a planner")
	i := strings.Index(section, "**The files a new planner touches.**")
	if i < 0 {
		t.Fatal(`"How to add a planner" has no paragraph "**The files a new planner touches.**"`)
	}
	para, _, _ := strings.Cut(section[i:], "\n\n")
	paths := backticked(para)
	if len(paths) < 4 {
		t.Fatalf("the files a new planner touches name too few paths: %q", paths)
	}
	for _, p := range paths {
		if strings.ContainsAny(p, "<*") { // a pattern: its folder exists
			p = p[:strings.IndexAny(p, "<*")]
		}
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			t.Errorf("the guide names %s, which does not exist: %v", p, err)
		}
	}
}

// namingFiles returns the non-test Go files outside planner/ whose string literals spell
// an algorithm's name, with the names they spell.
func namingFiles(t *testing.T, names map[string]bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "testdata" || d.Name() == "node_modules" ||
				rel == "planner" || rel == "python" || rel == "build" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, s := range spelt(f, names) {
			if !slices.Contains(out[rel], s) {
				out[rel] = append(out[rel], s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// spelt returns the words of words that f's string literals spell, in order, repeated as
// often as spelt.
func spelt(f *ast.File, words map[string]bool) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && words[s] {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

func TestGuideNamesEveryPlaceThatSpellsAnAlgorithm(t *testing.T) {
	rows := tableRows(t, guideSection(t, "The registry"), "| file | why |")
	listed := map[string]bool{}
	for _, r := range rows {
		listed[strings.TrimSuffix(r[0], "**")] = true
	}
	names := map[string]bool{}
	for _, e := range planner.Entries() {
		names[e.Name] = true
	}
	found := namingFiles(t, names)
	for file, spelt := range found {
		covered := listed[file]
		for l := range listed {
			if strings.HasSuffix(l, "/") && strings.HasPrefix(file, l) {
				covered = true
			}
		}
		if !covered {
			t.Errorf("%s spells %q, and docs/ARCHITECTURE.md's list of the places that spell an algorithm's name "+
				"does not name it: read the name from the registry (planner.Entries, a planner package's constant) "+
				"or add the file to the list with the reason", file, spelt)
		}
	}
	for l := range listed {
		if strings.HasSuffix(l, "/") {
			continue
		}
		if _, ok := found[l]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s as spelling an algorithm's name, and it spells none: drop the row", l)
		}
	}
}
