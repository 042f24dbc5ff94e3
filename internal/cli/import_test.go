package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestImportPipeDream(t *testing.T) {
	out := filepath.Join(t.TempDir(), "resnet18.json")
	code, stdout, errs := run(t, "import", "pipedream", "../../testdata/pipedream/resnet18.graph.txt", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing with -o", stdout)
	}
	if !strings.Contains(errs, "71 nodes, 79 edges -> 23 layers") {
		t.Errorf("summary %q", errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := chainplan.ParseChain(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 23 || c.InputBytes != 154140672 {
		t.Errorf("chain of %d layers, input %d; want 23 layers, input 154140672", c.Len(), c.InputBytes)
	}
	// The chain is what solve reads.
	if code, _, errs := run(t, "solve", "--chain", out, "--budget", "100GB"); code != 0 {
		t.Errorf("solve on the imported chain: exit %d: %s", code, errs)
	}
}

func TestImportPipeDreamStdout(t *testing.T) {
	code, stdout, errs := run(t, "import", "pipedream", "../../testdata/pipedream/alexnet.graph.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if c, err := chainplan.ParseChain([]byte(stdout)); err != nil || c.Len() != 21 {
		t.Fatalf("stdout is no 21-layer chain: %v", err)
	}
}

func TestImportPipeDreamBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "node1 -- Input -- forward_compute_time=0, backward_compute_time=0, activation_size=4, parameter_size=0\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NaN", []string{write("nan.txt", good+"node2 -- ReLU -- forward_compute_time=nan, backward_compute_time=0, activation_size=4, parameter_size=0\n")},
			`nan.txt: pipedream profile: line 2: node2: field "forward_compute_time": "nan" is not finite`},
		{"Negative", []string{write("neg.txt", good+"node2 -- ReLU -- forward_compute_time=1, backward_compute_time=0, activation_size=-4, parameter_size=0\n")},
			`line 2: node2: field "activation_size": negative value -4`},
		{"Garbled", []string{write("garbled.txt", good+"\tnode1 -> node2\n")}, "line 2: neither a node line"},
		{"NotLinear", []string{write("two.txt", good+strings.ReplaceAll(good, "node1 -- Input", "node2 -- Linear")+
			strings.ReplaceAll(good, "node1 -- Input", "node3 -- Linear")+"\tnode1 -- node2\n\tnode1 -- node3\n")},
			"cannot be linearized: two outputs"},
		{"Missing", []string{filepath.Join(dir, "absent.txt")}, "no such file"},
		{"NoFile", nil, "import pipedream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := run(t, append([]string{"import", "pipedream"}, tc.args...)...)
			if code != exitBadInput {
				t.Errorf("exit %d, want %d (%s)", code, exitBadInput, errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q, want it to contain %q", errs, tc.want)
			}
		})
	}
}
