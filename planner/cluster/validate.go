package cluster

import (
	"fmt"
	"math"
	"strings"
)

// validate checks the values of c, naming fields as the file spells them.
func (c *Cluster) validate() error {
	if strings.TrimSpace(c.Name) == "" {
		return fieldErr("name", 0, "missing: give the cluster a name")
	}
	if len(c.Nodes) == 0 {
		return fieldErr("nodes", 0, "missing or empty: list the nodes")
	}
	devices := 0
	names := map[string]int{}
	for i, n := range c.Nodes {
		path, line := c.nodeAt(i)
		switch {
		case strings.TrimSpace(n.Name) == "":
			return fieldErr(path+".name", line, "empty")
		case strings.TrimSpace(n.DeviceType) == "":
			return fieldErr(path+".gpu", line, "missing: name the device type (e.g. V100-16GB)")
		case n.Devices < 1:
			return fieldErr(path+".gpus", line, "want ≥ 1 devices (got %d)", n.Devices)
		case n.MemoryBytes <= 0:
			return fieldErr(path+".gpu_mem", line, "want each device's memory in bytes, > 0 (got %d)", n.MemoryBytes)
		case n.NICs < 1:
			return fieldErr(path+".nics", line, "want ≥ 1 network interfaces (got %d)", n.NICs)
		}
		if j, dup := names[n.Name]; dup {
			return fieldErr(path+".name", line, "%q names node %d too: node names must differ", n.Name, j)
		}
		names[n.Name] = i
		for _, b := range []struct {
			field string
			v     float64
		}{{"intra_bw", n.IntraBandwidth}, {"inter_bw", n.InterBandwidth}, {"host_bw", n.HostBandwidth}} {
			if math.IsNaN(b.v) || math.IsInf(b.v, 0) || b.v < 0 {
				return fieldErr(path+"."+b.field, line, "want a positive, finite bandwidth (got %v)", b.v)
			}
		}
		if c.BandwidthMatrix == nil {
			if n.Devices > 1 && n.IntraBandwidth == 0 {
				return fieldErr(path+".intra_bw", line, "missing: a node of %d devices needs its intra-node bandwidth (intra_bw_gbps or intra_bw)", n.Devices)
			}
			if len(c.Nodes) > 1 && n.InterBandwidth == 0 {
				return fieldErr(path+".inter_bw", line, "missing: a cluster of %d nodes needs each node's network bandwidth (inter_bw_gbps or inter_bw)", len(c.Nodes))
			}
		}
		devices += n.Devices
		if devices > MaxDevices {
			return fieldErr("nodes", 0, "more than %d devices", MaxDevices)
		}
	}
	if err := c.validateNetwork(); err != nil {
		return err
	}
	return c.validateMatrix(devices)
}

func (c *Cluster) validateNetwork() error {
	for _, f := range []struct {
		field string
		v     float64
	}{{"latency.intra_s", c.IntraLatencyS}, {"latency.inter_s", c.InterLatencyS}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > 1 {
			return fieldErr(f.field, 0, "want a latency in seconds, 0..1 (got %v)", f.v)
		}
	}
	prev := 1
	for i, l := range c.Levels {
		path, line := fmt.Sprintf("levels[%d]", i), 0
		if i < len(c.levelLines) {
			line = c.levelLines[i]
		}
		switch {
		case strings.TrimSpace(l.Name) == "":
			return fieldErr(path+".name", line, "missing: name the level (leaf, rack, ...)")
		case l.Nodes <= prev:
			return fieldErr(path+".nodes", line, "want more nodes than the level below (%d), got %d: levels go from the smallest block to the largest", prev, l.Nodes)
		case math.IsNaN(l.LatencyS) || math.IsInf(l.LatencyS, 0) || l.LatencyS < 0 || l.LatencyS > 1:
			return fieldErr(path+".latency_s", line, "want a latency in seconds, 0..1 (got %v)", l.LatencyS)
		case math.IsNaN(l.Bandwidth) || math.IsInf(l.Bandwidth, 0) || l.Bandwidth < 0:
			return fieldErr(path+".bw", line, "want a positive, finite bandwidth (got %v)", l.Bandwidth)
		}
		prev = l.Nodes
	}
	switch c.Contention.Mode {
	case ContentionAuto, ContentionNone:
	case ContentionFixed:
		if math.IsNaN(c.Contention.Flows) || math.IsInf(c.Contention.Flows, 0) || c.Contention.Flows < 1 {
			return fieldErr("contention.inter_node_shared_nic_flows", 0, "want a number of flows ≥ 1 (got %v)", c.Contention.Flows)
		}
	default:
		return fieldErr("contention.inter_node_shared_nic_flows", 0, "want auto, none or a number (got mode %q)", c.Contention.Mode)
	}
	return nil
}

func (c *Cluster) validateMatrix(devices int) error {
	m := c.BandwidthMatrix
	if m == nil {
		return nil
	}
	key := c.matrixKey
	if key == "" {
		key = "bandwidth_matrix"
	}
	if len(m) != devices {
		return fieldErr(key, 0, "want %d rows, one per device (got %d)", devices, len(m))
	}
	// Every row's length is checked before any entry, because the symmetry
	// check below reads m[j][i] for rows not yet visited.
	for i, row := range m {
		if len(row) != devices {
			return fieldErr(fmt.Sprintf("%s[%d]", key, i), 0, "want %d entries, one per device (got %d)", devices, len(row))
		}
	}
	for i, row := range m {
		for j, v := range row {
			if i == j {
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return fieldErr(fmt.Sprintf("%s[%d][%d]", key, i, j), 0, "want a positive, finite bandwidth (got %v)", v)
			}
			if v != m[j][i] {
				return fieldErr(fmt.Sprintf("%s[%d][%d]", key, i, j), 0, "%v differs from entry [%d][%d] (%v): links are symmetric", v, j, i, m[j][i])
			}
		}
	}
	return nil
}

// nodeAt returns the file path and line of node i's entry.
func (c *Cluster) nodeAt(i int) (string, int) {
	if i < len(c.paths) {
		return c.paths[i].path, c.paths[i].line
	}
	return fmt.Sprintf("nodes[%d]", i), 0
}
