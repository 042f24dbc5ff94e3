package madpipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile/pipedream"
)

// profile returns the chain of a shared PipeDream profile (testdata/pipedream).
func profile(tb testing.TB, name string) *chainplan.Chain {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "pipedream", name+".graph.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	g, err := pipedream.Parse(f)
	if err != nil {
		tb.Fatal(err)
	}
	imp, err := pipedream.Linearize(g)
	if err != nil {
		tb.Fatal(err)
	}
	return imp.Chain
}

func profileNames(tb testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "pipedream", "*.graph.txt"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no shared profiles: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".graph.txt"))
	}
	return names
}
