package cluster

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chainplan/chainplan"
)

// specRule is the pair-bandwidth rule as the spec's example file writes it (§5.1), accepted
// as a spelling of "min_inter".
const specRule = "intra if same node else min(inter[a], inter[b])"

// ReadFile reads and checks a cluster file (YAML or JSON).
func ReadFile(path string) (*Cluster, error) {
	data, err := chainplan.ReadInput(path, "a cluster file (YAML or JSON)")
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a cluster description, YAML or JSON (docs/parallel.md, "Cluster files"):
//
//	name: amp-het-cluster
//	nodes:
//	  - {name: p3, count: 3, gpu: V100-16GB, gpus: 4, gpu_mem: 16e9, intra_bw_gbps: 170, inter_bw_gbps: 10}
//	  - {name: g4, gpu: T4-16GB, gpus: 4, gpu_mem: 16e9, intra_bw_gbps: 50, inter_bw_gbps: 50}
//	latency: {intra_s: 9e-6, inter_s: 3e-5}
//	contention: {inter_node_shared_nic_flows: auto}
//
// Every refusal is a *FieldError naming the field and its line, but for a format tag this
// chainplan does not read: a *chainplan.FormatError.
func Parse(data []byte) (*Cluster, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FieldError{Msg: "not YAML or JSON: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &FieldError{Msg: "empty document (want a mapping with name and nodes)"}
	}
	root, err := newObject("", doc.Content[0])
	if err != nil {
		return nil, err
	}
	c, err := parseRoot(root)
	if err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.index()
	return c, nil
}

func parseRoot(o *object) (*Cluster, error) {
	c := &Cluster{}
	format, err := o.str("format")
	if err != nil {
		return nil, err
	}
	if format != "" {
		// Of ErrUnsupported, as a *FieldError is: a bad cluster is bad input.
		if err := chainplan.CheckFormat(format, chainplan.ErrUnsupported, Format); err != nil {
			return nil, err
		}
	}
	if c.Name, err = o.str("name"); err != nil {
		return nil, err
	}
	if c.Name == "" {
		return nil, fieldErr("name", o.node.Line, "missing: give the cluster a name")
	}
	nodes, err := o.list("nodes")
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fieldErr("nodes", o.node.Line, "missing or empty: list the nodes (gpu, gpus, gpu_mem, bandwidths)")
	}
	for i, n := range nodes {
		if err := parseNode(c, fmt.Sprintf("nodes[%d]", i), n); err != nil {
			return nil, err
		}
	}
	if err := parseLevels(c, o); err != nil {
		return nil, err
	}
	if err := parseLatency(c, o); err != nil {
		return nil, err
	}
	if err := parseContention(c, o); err != nil {
		return nil, err
	}
	rule, err := o.str("pair_bandwidth_rule")
	if err != nil {
		return nil, err
	}
	if err := parseMatrix(c, o); err != nil {
		return nil, err
	}
	switch rule {
	case "", "min_inter", specRule:
	case "matrix":
		if c.BandwidthMatrix == nil {
			return nil, fieldErr("pair_bandwidth_rule", o.keys["pair_bandwidth_rule"].Line,
				"matrix needs bandwidth_matrix (or bandwidth_matrix_gbps)")
		}
	default:
		return nil, fieldErr("pair_bandwidth_rule", o.keys["pair_bandwidth_rule"].Line,
			"unknown rule %q (want min_inter, the default: intra-node bandwidth in a node, else min(inter[a], inter[b]); or matrix)", rule)
	}
	return c, o.done()
}

func parseNode(c *Cluster, path string, item *yaml.Node) error {
	o, err := newObject(path, item)
	if err != nil {
		return err
	}
	n := Node{}
	if n.Name, err = o.str("name"); err != nil {
		return err
	}
	if n.DeviceType, err = o.str("gpu"); err != nil {
		return err
	}
	if n.DeviceType == "" {
		return fieldErr(o.at("gpu"), item.Line, "missing: name the device type (e.g. V100-16GB)")
	}
	var ok bool
	if n.Devices, ok, err = o.integer("gpus"); err != nil {
		return err
	} else if !ok || n.Devices < 1 {
		return fieldErr(o.at("gpus"), item.Line, "want the number of devices of the node, ≥ 1 (got %d)", n.Devices)
	}
	count, hasCount, err := o.integer("count")
	if err != nil {
		return err
	}
	if !hasCount {
		count = 1
	}
	if count < 1 {
		return fieldErr(o.at("count"), item.Line, "want the number of such nodes, ≥ 1 (got %d)", count)
	}
	if total := c.devices() + count*n.Devices; count > MaxDevices || n.Devices > MaxDevices || total > MaxDevices {
		return fieldErr(o.at("count"), item.Line, "the cluster would have more than %d devices", MaxDevices)
	}
	if n.MemoryBytes, ok, err = o.bytes("gpu_mem"); err != nil {
		return err
	} else if !ok || n.MemoryBytes <= 0 {
		return fieldErr(o.at("gpu_mem"), item.Line, "want each device's memory, bytes > 0 or a size such as 16GiB")
	}
	if n.IntraBandwidth, _, err = o.bandwidth("intra_bw"); err != nil {
		return err
	}
	if n.InterBandwidth, _, err = o.bandwidth("inter_bw"); err != nil {
		return err
	}
	if n.HostBandwidth, _, err = o.bandwidth("host_bw"); err != nil {
		return err
	}
	nics, hasNICs, err := o.integer("nics")
	switch {
	case err != nil:
		return err
	case !hasNICs:
		nics = 1
	case nics < 1:
		return fieldErr(o.at("nics"), item.Line, "want the number of network interfaces, ≥ 1 (got %d)", nics)
	}
	n.NICs = nics
	if err := o.done(); err != nil {
		return err
	}
	if n.Name == "" {
		n.Name = fmt.Sprintf("node%d", len(c.Nodes))
	}
	base := n.Name
	for k := range count {
		if count > 1 {
			n.Name = fmt.Sprintf("%s-%d", base, k)
		}
		c.Nodes = append(c.Nodes, n)
		c.paths = append(c.paths, nodePath{path, item.Line})
	}
	return nil
}

func parseLevels(c *Cluster, o *object) error {
	items, err := o.list("levels")
	if err != nil {
		return err
	}
	for i, item := range items {
		lo, err := newObject(fmt.Sprintf("levels[%d]", i), item)
		if err != nil {
			return err
		}
		l := Level{}
		if l.Name, err = lo.str("name"); err != nil {
			return err
		}
		nodes, ok, err := lo.integer("nodes")
		if err != nil {
			return err
		}
		if !ok {
			return fieldErr(lo.at("nodes"), item.Line, "missing: the number of nodes a block of this level holds")
		}
		l.Nodes = nodes
		if l.LatencyS, _, err = lo.number("latency_s"); err != nil {
			return err
		}
		if l.Bandwidth, _, err = lo.bandwidth("bw"); err != nil {
			return err
		}
		if err := lo.done(); err != nil {
			return err
		}
		c.Levels = append(c.Levels, l)
		c.levelLines = append(c.levelLines, item.Line)
	}
	return nil
}

func parseLatency(c *Cluster, o *object) error {
	lo, err := o.child("latency")
	if err != nil || lo == nil {
		return err
	}
	if c.IntraLatencyS, _, err = lo.number("intra_s"); err != nil {
		return err
	}
	if c.InterLatencyS, _, err = lo.number("inter_s"); err != nil {
		return err
	}
	return lo.done()
}

func parseContention(c *Cluster, o *object) error {
	c.Contention = Contention{Mode: ContentionAuto}
	co, err := o.child("contention")
	if err != nil || co == nil {
		return err
	}
	const key = "inter_node_shared_nic_flows"
	v := co.get(key)
	switch {
	case v == nil:
	case v.Tag == "!!str" && (v.Value == ContentionAuto || v.Value == ContentionNone):
		c.Contention.Mode = v.Value
	default:
		f, err := scalarNumber(co.at(key), v)
		if err != nil || f < 1 {
			return fieldErr(co.at(key), v.Line, "want auto, none or a number of flows ≥ 1 (got %s)", kindName(v))
		}
		c.Contention = Contention{Mode: ContentionFixed, Flows: f}
	}
	return co.done()
}

func parseMatrix(c *Cluster, o *object) error {
	rows, err := o.list("bandwidth_matrix")
	if err != nil {
		return err
	}
	key, scale := "bandwidth_matrix", 1.0
	gb, err := o.list("bandwidth_matrix_gbps")
	if err != nil {
		return err
	}
	switch {
	case rows != nil && gb != nil:
		return fieldErr("bandwidth_matrix", o.keys["bandwidth_matrix"].Line, "give bandwidth_matrix or bandwidth_matrix_gbps, not both")
	case gb != nil:
		rows, key, scale = gb, "bandwidth_matrix_gbps", 1e9/8
	case rows == nil:
		return nil
	}
	for i, r := range rows {
		path := fmt.Sprintf("%s[%d]", key, i)
		if r.Kind != yaml.SequenceNode {
			return fieldErr(path, r.Line, "want a row of numbers (got %s)", kindName(r))
		}
		row := make([]float64, len(r.Content))
		for j, v := range r.Content {
			f, err := scalarNumber(fmt.Sprintf("%s[%d]", path, j), v)
			if err != nil {
				return err
			}
			row[j] = f * scale
		}
		c.BandwidthMatrix = append(c.BandwidthMatrix, row)
	}
	c.matrixKey = key
	return nil
}
