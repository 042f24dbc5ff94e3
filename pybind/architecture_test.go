package pybind

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureEnvelopeClaims holds docs/ARCHITECTURE.md's "One source envelope" to the
// code: the entries it says take the envelope are the ones
// TestEveryEntryRefusesABadSourceAlike gives every bad source, and each test and test file
// it names as checking the envelope exists.
func TestArchitectureEnvelopeClaims(t *testing.T) {
	const root = ".."
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "### One source envelope")
	if start < 0 {
		t.Fatal(`docs/ARCHITECTURE.md has no "### One source envelope" section`)
	}
	sec := text[start:]
	if end := strings.Index(sec[1:], "\n## "); end >= 0 {
		sec = sec[:end+1]
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	list := regexp.MustCompile("(?s)Every family's entry in `pybind` \\(([^)]*)\\)").FindStringSubmatch(sec)
	if list == nil {
		t.Fatal("the section no longer lists the entries that take the envelope")
	}
	var listed []string
	for _, m := range quoted.FindAllStringSubmatch(list[1], -1) {
		listed = append(listed, m[1])
	}
	var tested []string
	for name := range sourceEntries(t, "{}") {
		tested = append(tested, name)
	}
	slices.Sort(listed)
	slices.Sort(tested)
	if !slices.Equal(listed, tested) {
		t.Errorf("the section lists the entries %v; the test gives bad sources to %v", listed, tested)
	}

	// Every test function and test file defined in the tree, to look the section's names up in.
	defined := map[string]bool{}
	funcs := regexp.MustCompile(`(?m)^func (Test\w+)\(|^def (test_\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		name := d.Name()
		if d.IsDir() || !(strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "test_") && strings.HasSuffix(name, ".py")) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		defined[filepath.ToSlash(rel)], defined[name] = true, true
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcs.FindAllStringSubmatch(string(data), -1) {
			defined[m[1]+m[2]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, m := range quoted.FindAllStringSubmatch(sec, -1) {
		name := m[1]
		if !(regexp.MustCompile(`^(Test\w+|test_\w+)$`).MatchString(name) || strings.HasSuffix(name, "_test.go") ||
			strings.Contains(name, "tests/") && strings.HasSuffix(name, ".py")) {
			continue
		}
		named++
		if !defined[name] {
			t.Errorf("docs/ARCHITECTURE.md, One source envelope, names %s, which no test file defines", name)
		}
	}
	if named == 0 {
		t.Error("the section names no test for its claims")
	}
}
