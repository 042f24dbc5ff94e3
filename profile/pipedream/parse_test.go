package pipedream

import (
	"errors"
	"strings"
	"testing"
)

func TestParseNodesAndEdges(t *testing.T) {
	text := "node1 -- Input0 -- forward_compute_time=3.5, backward_compute_time=0.000, activation_size=1024.0, parameter_size=0.000\n" +
		"node2 -- LSTM(2048, 1024) -- forward_compute_time=3.190, backward_compute_time=5.348, activation_size=[6291456.0; 131072.0; 131072.5], parameter_size=50364416.000\n" +
		"\n" +
		"\tnode1 -- node2\n" +
		"\tnode1 -- node2\n" // a duplicate edge is kept once
	g, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(g.Nodes), 2; got != want {
		t.Fatalf("len(Nodes)=%d, want %d", got, want)
	}
	if got, want := len(g.Edges), 1; got != want {
		t.Fatalf("len(Edges)=%d, want %d", got, want)
	}
	n := g.Nodes[1]
	if n.ID != "node2" || n.Desc != "LSTM(2048, 1024)" || n.Line != 2 {
		t.Errorf("node = %+v", n)
	}
	// A tuple output's sizes add up, rounded up to a whole byte.
	if got, want := n.ActBytes, int64(6291456+131072+131073); got != want {
		t.Errorf("ActBytes=%d, want %d", got, want)
	}
	if n.FwdMS != 3.190 || n.BwdMS != 5.348 || n.ParamBytes != 50364416 {
		t.Errorf("metrics = %+v", n)
	}
	if e := g.Edges[0]; e.From != "node1" || e.To != "node2" || e.Line != 4 {
		t.Errorf("edge = %+v", e)
	}
}

func TestParseDescriptionWithSeparator(t *testing.T) {
	// A description may itself contain " -- "; the metrics are after the last one.
	g, err := Parse(strings.NewReader("node1 -- odd -- name -- forward_compute_time=1, backward_compute_time=2, activation_size=3, parameter_size=4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Nodes[0].Desc, "odd -- name"; got != want {
		t.Errorf("Desc=%q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	good := "node1 -- Input -- forward_compute_time=0, backward_compute_time=0, activation_size=4, parameter_size=0\n"
	for _, tc := range []struct {
		name string
		text string
		line int
		want string
	}{
		{"Empty", "\n\n", 0, "no node lines"},
		{"Garbage", good + "hello world\n", 2, "neither a node line"},
		{"NaN", good + "node2 -- ReLU -- forward_compute_time=NaN, backward_compute_time=0, activation_size=4, parameter_size=0\n", 2, `"forward_compute_time": "NaN" is not finite`},
		{"Negative", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=-2, activation_size=4, parameter_size=0\n", 2, `"backward_compute_time": negative value -2`},
		{"NotANumber", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=four, parameter_size=0\n", 2, `"activation_size": "four" is not a number`},
		{"BadList", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=[1; 2, parameter_size=0\n", 2, "must end with ']'"},
		{"Huge", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=1e30, parameter_size=0\n", 2, "larger than"},
		{"Unknown", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=4, weight_size=0\n", 2, `unknown field "weight_size"`},
		{"Missing", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=2, activation_size=4\n", 2, `missing field "parameter_size"`},
		{"Twice", good + "node2 -- ReLU -- forward_compute_time=1, forward_compute_time=2, activation_size=4, parameter_size=0\n", 2, "given twice"},
		{"NoEquals", good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time 2, activation_size=4, parameter_size=0\n", 2, "is not key=value"},
		{"Duplicate", good + good, 2, "node1 declared again (first on line 1)"},
		{"Undeclared", good + "\tnode1 -- node9\n", 2, "undeclared node node9"},
		{"SelfLoop", good + "\tnode1 -- node1\n", 2, "to itself"},
		{"Cycle", good + strings.Replace(good, "node1", "node2", 1) + "\tnode1 -- node2\n\tnode2 -- node1\n", 4, "closes a cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err=%v, want a *ParseError", err)
			}
			if !errors.Is(err, ErrInvalidProfile) {
				t.Errorf("errors.Is(err, ErrInvalidProfile) is false")
			}
			if pe.Line != tc.line {
				t.Errorf("Line=%d, want %d (%v)", pe.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err=%q, want it to contain %q", err, tc.want)
			}
		})
	}
}
