package cluster

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chainplan/chainplan"
)

// object reads one mapping of the file, field by field, so that every error names the
// field's path and line; done refuses the keys nobody asked for.
type object struct {
	path  string
	node  *yaml.Node
	keys  map[string]*yaml.Node
	asked []string
}

func newObject(path string, n *yaml.Node) (*object, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fieldErr(path, n.Line, "want a mapping of fields (got %s)", kindName(n))
	}
	o := &object{path: path, node: n, keys: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, dup := o.keys[k.Value]; dup {
			return nil, fieldErr(o.at(k.Value), k.Line, "given twice")
		}
		o.keys[k.Value] = n.Content[i+1]
	}
	return o, nil
}

func (o *object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns the value of key, nil when absent (a YAML null counts as absent).
func (o *object) get(key string) *yaml.Node {
	o.asked = append(o.asked, key)
	v := o.keys[key]
	if v == nil || v.Tag == "!!null" {
		return nil
	}
	return v
}

// done refuses the keys that no get asked for, naming the fields that exist.
func (o *object) done() error {
	for i := 0; i+1 < len(o.node.Content); i += 2 {
		k := o.node.Content[i]
		if !slices.Contains(o.asked, k.Value) {
			known := slices.Clone(o.asked)
			slices.Sort(known)
			return fieldErr(o.at(k.Value), k.Line, "unknown field (known here: %s)", strings.Join(slices.Compact(known), ", "))
		}
	}
	return nil
}

func (o *object) str(key string) (string, error) {
	v := o.get(key)
	if v == nil {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", fieldErr(o.at(key), v.Line, "want a string (got %s)", kindName(v))
	}
	return strings.TrimSpace(v.Value), nil
}

// number reads a plain number; ok is false when the key is absent.
func (o *object) number(key string) (f float64, ok bool, err error) {
	v := o.get(key)
	if v == nil {
		return 0, false, nil
	}
	f, err = scalarNumber(o.at(key), v)
	return f, err == nil, err
}

func scalarNumber(path string, v *yaml.Node) (float64, error) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		return 0, fieldErr(path, v.Line, "want a number (got %s)", kindName(v))
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v.Value, "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fieldErr(path, v.Line, "want a finite number (got %q)", v.Value)
	}
	return f, nil
}

// integer reads a whole number; ok is false when the key is absent.
func (o *object) integer(key string) (n int, ok bool, err error) {
	f, ok, err := o.number(key)
	if err != nil || !ok {
		return 0, ok, err
	}
	if f != math.Trunc(f) || math.Abs(f) > MaxDevices*1024 {
		return 0, false, fieldErr(o.at(key), o.keys[key].Line, "want a whole number (got %v)", o.keys[key].Value)
	}
	return int(f), true, nil
}

// bytes reads a memory size: a number of bytes (16e9) or a size with a unit ("16GiB").
func (o *object) bytes(key string) (n int64, ok bool, err error) {
	v := o.get(key)
	if v == nil {
		return 0, false, nil
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		n, err := chainplan.ParseBytes(v.Value)
		if err != nil {
			return 0, false, fieldErr(o.at(key), v.Line, "%v", err)
		}
		return n, true, nil
	}
	f, err := scalarNumber(o.at(key), v)
	if err != nil {
		return 0, false, err
	}
	if f != math.Trunc(f) || f < 0 || f > math.MaxInt64/2 {
		return 0, false, fieldErr(o.at(key), v.Line, "want a whole number of bytes ≥ 0 (got %v)", v.Value)
	}
	return int64(f), true, nil
}

// bandwidth reads a bandwidth in bytes per second from key (a number of bytes per second
// or a string with a unit, "12.5GB/s") or from key+"_gbps" (gigabits per second, the
// spec's unit); giving both is an error. ok is false when neither is given.
func (o *object) bandwidth(key string) (bps float64, ok bool, err error) {
	gb, hasGb, err := o.number(key + "_gbps")
	if err != nil {
		return 0, false, err
	}
	v := o.get(key)
	switch {
	case hasGb && v != nil:
		return 0, false, fieldErr(o.at(key), v.Line, "give %s or %s_gbps, not both", key, key)
	case hasGb:
		if gb <= 0 {
			return 0, false, fieldErr(o.at(key+"_gbps"), o.keys[key+"_gbps"].Line, "want a positive number of gigabits per second (got %v)", gb)
		}
		return gb * 1e9 / 8, true, nil
	case v == nil:
		return 0, false, nil
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		b, err := chainplan.ParseBandwidth(v.Value)
		if err != nil {
			return 0, false, fieldErr(o.at(key), v.Line, "%v", err)
		}
		return b, true, nil
	}
	f, err := scalarNumber(o.at(key), v)
	if err != nil {
		return 0, false, err
	}
	if f <= 0 {
		return 0, false, fieldErr(o.at(key), v.Line, "want a positive number of bytes per second (got %v)", f)
	}
	return f, true, nil
}

// list returns the items of a sequence at key (nil when absent).
func (o *object) list(key string) ([]*yaml.Node, error) {
	v := o.get(key)
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fieldErr(o.at(key), v.Line, "want a list (got %s)", kindName(v))
	}
	return v.Content, nil
}

func (o *object) child(key string) (*object, error) {
	v := o.get(key)
	if v == nil {
		return nil, nil
	}
	return newObject(o.at(key), v)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}
