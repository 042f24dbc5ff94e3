package cluster

import (
	"encoding/json"
	"fmt"
	"math"
)

// Format is the tag of a cluster's canonical JSON document, the form the store keeps
// (Canonical). Files may carry it in their format field; it is optional there.
const Format = "chainplan.cluster/v1"

// MaxDevices bounds the devices of one cluster: the planners enumerate degrees and
// placements over them, and a bandwidth matrix has their square entries.
const MaxDevices = 1 << 16

// Cluster is a validated cluster description (spec §5.1). Build it with Parse (a file) or
// New (the value itself, checked); it is immutable afterwards.
type Cluster struct {
	// Name names the cluster in output and in the store.
	Name string
	// Nodes are the nodes in device order, a node declared with a count expanded into
	// that many nodes ("p3" with count 3 becomes "p3-0", "p3-1", "p3-2").
	Nodes []Node
	// Levels are the network's hierarchy above the node (a leaf switch, a rack), from the
	// smallest block of nodes to the largest; empty for a flat network.
	Levels []Level
	// IntraLatencyS is α inside a node, seconds (ParaDL's Hockney latency; AMP uses none).
	IntraLatencyS float64
	// InterLatencyS is α between nodes that no level holds together, seconds.
	InterLatencyS float64
	// Contention is the rule that divides the bandwidth of groups sharing a network
	// interface (ParaDL's φ).
	Contention Contention
	// BandwidthMatrix, when set, is the bandwidth of every device pair in bytes per second
	// (N×N, symmetric; the diagonal is ignored): AMP's general form. It replaces the
	// node and level bandwidths; the latencies still come from the node and level rules.
	BandwidthMatrix [][]float64

	nodeOf []int // device → node
	first  []int // node → its first device
	// Where Parse found each node, level and the matrix, for validation messages; empty
	// for a cluster built in code.
	paths      []nodePath
	levelLines []int
	matrixKey  string
}

// nodePath is the file path and line of the entry a node came from.
type nodePath struct {
	path string
	line int
}

// Node is one machine: Devices identical devices of MemoryBytes each.
type Node struct {
	Name string
	// DeviceType names the device model ("V100-16GB", "T4"): devices of one type run a
	// profile at the same speed.
	DeviceType string
	// Devices is the number of devices (GPUs) of the node, ≥ 1.
	Devices int
	// MemoryBytes is each device's memory, bytes.
	MemoryBytes int64
	// IntraBandwidth is the bandwidth between two devices of the node, bytes per second
	// (0 for a one-device node).
	IntraBandwidth float64
	// InterBandwidth is the bandwidth of one of the node's network interfaces, bytes per second
	// (0 in a one-node cluster).
	InterBandwidth float64
	// HostBandwidth is the device↔host copy bandwidth, bytes per second; 0 when not given
	// (offloading with pofo needs it).
	HostBandwidth float64
	// NICs is the number of network interfaces the node's devices share, ≥ 1.
	NICs int
}

// Level is one level of the network hierarchy: blocks of Nodes consecutive nodes (a leaf
// switch of 17 nodes, a rack) within which traffic has this latency and bandwidth.
type Level struct {
	Name string
	// Nodes is the size of a block, in nodes; blocks start at node 0.
	Nodes int
	// LatencyS is α between nodes of one block, seconds.
	LatencyS float64
	// Bandwidth caps the bandwidth between nodes of one block, bytes per second (an
	// oversubscribed switch); 0 means the nodes' interfaces alone.
	Bandwidth float64
}

// Contention modes.
const (
	// ContentionAuto divides a group's inter-node bandwidth by the number of concurrent
	// groups crossing each network interface: ⌈groups per node / NICs⌉ (ParaDL's φ for
	// "disjoint Allreduces that share the same InfiniBand link", 001:L553).
	ContentionAuto = "auto"
	// ContentionNone never divides (φ = 1).
	ContentionNone = "none"
	// ContentionFixed divides every inter-node group's bandwidth by Contention.Flows.
	ContentionFixed = "fixed"
)

// Contention is the rule for ParaDL's contention coefficient φ (β_eff = φ·β).
type Contention struct {
	Mode  string  // ContentionAuto, ContentionNone or ContentionFixed
	Flows float64 // φ of ContentionFixed, ≥ 1
}

// Device is one device of the cluster.
type Device struct {
	Index       int    // 0..N−1
	Node        int    // index into Cluster.Nodes
	Type        string // the node's DeviceType
	MemoryBytes int64
}

// New checks c (as Parse does a file) and returns it ready for use. The error is a
// *FieldError naming the field.
func New(c Cluster) (*Cluster, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.index()
	return &c, nil
}

func (c *Cluster) index() {
	c.nodeOf = c.nodeOf[:0]
	c.first = make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		c.first[i] = len(c.nodeOf)
		for range n.Devices {
			c.nodeOf = append(c.nodeOf, i)
		}
	}
}

// devices counts the devices of the nodes (before index sets nodeOf).
func (c *Cluster) devices() int {
	n := 0
	for _, nd := range c.Nodes {
		n += nd.Devices
	}
	return n
}

// NumDevices returns N, the number of devices.
func (c *Cluster) NumDevices() int { return len(c.nodeOf) }

// Device returns device i (0 ≤ i < N).
func (c *Cluster) Device(i int) Device {
	n := c.nodeOf[i]
	return Device{Index: i, Node: n, Type: c.Nodes[n].DeviceType, MemoryBytes: c.Nodes[n].MemoryBytes}
}

// NodeOf returns the node of device i.
func (c *Cluster) NodeOf(i int) int { return c.nodeOf[i] }

// MinDevicesPerNode is the smallest node's device count (Megatron's bound on the tensor
// degree, spec §3.6).
func (c *Cluster) MinDevicesPerNode() int {
	m := math.MaxInt
	for _, n := range c.Nodes {
		m = min(m, n.Devices)
	}
	return m
}

// Homogeneous reports whether every node has the same device type, device count and
// memory.
func (c *Cluster) Homogeneous() bool {
	for _, n := range c.Nodes[1:] {
		f := c.Nodes[0]
		if n.DeviceType != f.DeviceType || n.Devices != f.Devices || n.MemoryBytes != f.MemoryBytes {
			return false
		}
	}
	return true
}

// MinMemoryBytes is the smallest device memory of the cluster.
func (c *Cluster) MinMemoryBytes() int64 {
	m := int64(math.MaxInt64)
	for _, n := range c.Nodes {
		m = min(m, n.MemoryBytes)
	}
	return m
}

// DeviceTypes returns the device types in node order, each once.
func (c *Cluster) DeviceTypes() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		if !seen[n.DeviceType] {
			seen[n.DeviceType] = true
			out = append(out, n.DeviceType)
		}
	}
	return out
}

// Canonical returns the cluster as its canonical document: a cluster file (Format) with
// the nodes expanded and every bandwidth in bytes per second, which Parse reads back to an
// equal cluster. The store keeps this form.
func (c *Cluster) Canonical() []byte {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil { // a validated cluster holds finite numbers only
		panic(fmt.Sprintf("cluster: marshal: %v", err))
	}
	return b
}

// MarshalJSON writes the canonical document, in the file's field names.
func (c *Cluster) MarshalJSON() ([]byte, error) {
	type node struct {
		Name    string  `json:"name"`
		GPU     string  `json:"gpu"`
		GPUs    int     `json:"gpus"`
		GPUMem  int64   `json:"gpu_mem"`
		IntraBW float64 `json:"intra_bw,omitempty"`
		InterBW float64 `json:"inter_bw,omitempty"`
		HostBW  float64 `json:"host_bw,omitempty"`
		NICs    int     `json:"nics"`
	}
	type level struct {
		Name     string  `json:"name"`
		Nodes    int     `json:"nodes"`
		LatencyS float64 `json:"latency_s"`
		BW       float64 `json:"bw,omitempty"`
	}
	doc := struct {
		Format  string  `json:"format"`
		Name    string  `json:"name"`
		Nodes   []node  `json:"nodes"`
		Levels  []level `json:"levels,omitempty"`
		Latency struct {
			IntraS float64 `json:"intra_s"`
			InterS float64 `json:"inter_s"`
		} `json:"latency"`
		Contention struct {
			Flows any `json:"inter_node_shared_nic_flows"`
		} `json:"contention"`
		Matrix [][]float64 `json:"bandwidth_matrix,omitempty"`
	}{Format: Format, Name: c.Name, Matrix: c.BandwidthMatrix}
	for _, n := range c.Nodes {
		doc.Nodes = append(doc.Nodes, node{n.Name, n.DeviceType, n.Devices, n.MemoryBytes,
			n.IntraBandwidth, n.InterBandwidth, n.HostBandwidth, n.NICs})
	}
	for _, l := range c.Levels {
		doc.Levels = append(doc.Levels, level{l.Name, l.Nodes, l.LatencyS, l.Bandwidth})
	}
	doc.Latency.IntraS, doc.Latency.InterS = c.IntraLatencyS, c.InterLatencyS
	doc.Contention.Flows = c.Contention.Mode
	if c.Contention.Mode == ContentionFixed {
		doc.Contention.Flows = c.Contention.Flows
	}
	return json.Marshal(doc)
}
