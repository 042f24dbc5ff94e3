package pipedream

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary text to Parse and Linearize: neither may panic, every error
// is one of the package's, and every chain they return validates and accounts for each
// node once.
func FuzzParse(f *testing.F) {
	if testing.Short() {
		f.Skip("fuzzing is skipped in -short mode")
	}
	for _, name := range []string{"alexnet", "gnmt"} {
		b, err := os.ReadFile("../../testdata/pipedream/" + name + ".graph.txt")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(profileText([]tn{{1, "Input", 0, 64, 0}, {2, "Conv", 1, 32, 8}, {3, "ReLU", 1, 32, 0}, {4, "Add", 1, 32, 0}},
		"1>2 2>3 2>4 3>4"))
	f.Add("node1 -- x -- forward_compute_time=1, backward_compute_time=1, activation_size=[1; 2], parameter_size=0\n\tnode1 -- node1\n")
	f.Fuzz(func(t *testing.T, text string) {
		g, err := Parse(strings.NewReader(text))
		if err != nil {
			if !errors.Is(err, ErrInvalidProfile) {
				t.Fatalf("Parse error %v is not ErrInvalidProfile", err)
			}
			return
		}
		imp, err := Linearize(g)
		if err != nil {
			if !errors.Is(err, ErrNotLinear) {
				t.Fatalf("Linearize error %v is not ErrNotLinear", err)
			}
			return
		}
		if err := imp.Chain.Validate(); err != nil {
			t.Fatal(err)
		}
		n := len(imp.Inputs) + len(imp.Constants)
		for _, l := range imp.Layers {
			n += len(l.Nodes)
		}
		if n != len(g.Nodes) {
			t.Fatalf("%d nodes accounted for, the graph has %d", n, len(g.Nodes))
		}
	})
}
