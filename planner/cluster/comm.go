package cluster

import (
	"math"
)

// Link is the cost model of one communicator (a device pair or a group): Hockney's
// T(m) = α + m·β with α = LatencyS and β = 1/Bandwidth (spec §2.4).
type Link struct {
	LatencyS  float64 // α, seconds per message
	Bandwidth float64 // bytes per second; +Inf for a group of one device (no transfer)
	// InterNode is set when the communicator crosses nodes (contention applies).
	InterNode bool
}

// local is the link of a one-device group: nothing moves.
var local = Link{Bandwidth: math.Inf(1)}

// Time returns α + bytes/bandwidth, the time of one message of bytes over l.
func (l Link) Time(bytes float64) float64 { return l.LatencyS + bytes/l.Bandwidth }

// Shared returns l with its bandwidth divided by φ (β_eff = φ·β, spec §2.4); φ ≤ 1 leaves
// it as it is.
func (l Link) Shared(phi float64) Link {
	if phi > 1 {
		l.Bandwidth /= phi
	}
	return l
}

// Pair returns the link between devices a and b (a ≠ b): the matrix entry when the
// cluster has a matrix, else the node's intra-node link, else the smallest level holding
// both nodes, capped by the slower of the two network interfaces.
func (c *Cluster) Pair(a, b int) Link {
	if a == b {
		return local
	}
	na, nb := c.nodeOf[a], c.nodeOf[b]
	l := c.nodesLink(na, nb)
	if c.BandwidthMatrix != nil {
		l.Bandwidth = c.BandwidthMatrix[a][b]
	}
	return l
}

// nodesLink is the link between a device of node na and one of node nb.
func (c *Cluster) nodesLink(na, nb int) Link {
	if na == nb {
		return Link{LatencyS: c.IntraLatencyS, Bandwidth: c.Nodes[na].IntraBandwidth}
	}
	bw := min(c.Nodes[na].InterBandwidth, c.Nodes[nb].InterBandwidth)
	lat, capBW := c.spanLevel(min(na, nb), max(na, nb))
	if capBW > 0 {
		bw = min(bw, capBW)
	}
	return Link{LatencyS: lat, Bandwidth: bw, InterNode: true}
}

// spanLevel returns the latency and bandwidth cap of the smallest level whose block holds
// nodes lo..hi, or the inter-node latency and no cap when none does.
func (c *Cluster) spanLevel(lo, hi int) (float64, float64) {
	for _, l := range c.Levels {
		if lo/l.Nodes == hi/l.Nodes {
			return l.LatencyS, l.Bandwidth
		}
	}
	return c.InterLatencyS, 0
}

// Group returns the link of a communicator over devs (a ring through them): the lowest
// bandwidth and the highest latency over its pairs (AMP's rule, 003:L123). A group of at
// most one device moves nothing.
func (c *Cluster) Group(devs []int) Link {
	if len(devs) <= 1 {
		return local
	}
	if c.BandwidthMatrix != nil {
		l := Link{Bandwidth: math.Inf(1)}
		for i, a := range devs {
			for _, b := range devs[i+1:] {
				p := c.Pair(a, b)
				l.Bandwidth = min(l.Bandwidth, p.Bandwidth)
				l.LatencyS = max(l.LatencyS, p.LatencyS)
				l.InterNode = l.InterNode || p.InterNode
			}
		}
		return l
	}
	// Without a matrix the pairs' links depend on nodes only: O(|devs|).
	count := map[int]int{}
	lo, hi := math.MaxInt, -1
	for _, d := range devs {
		n := c.nodeOf[d]
		count[n]++
		lo, hi = min(lo, n), max(hi, n)
	}
	l := Link{Bandwidth: math.Inf(1)}
	for n, k := range count {
		if k > 1 {
			l.Bandwidth = min(l.Bandwidth, c.Nodes[n].IntraBandwidth)
			l.LatencyS = max(l.LatencyS, c.IntraLatencyS)
		}
	}
	if lo == hi {
		return l
	}
	lat, capBW := c.spanLevel(lo, hi)
	for n := range count {
		l.Bandwidth = min(l.Bandwidth, c.Nodes[n].InterBandwidth)
	}
	if capBW > 0 {
		l.Bandwidth = min(l.Bandwidth, capBW)
	}
	l.LatencyS = max(l.LatencyS, lat)
	l.InterNode = true
	return l
}

// Contended returns the group link l when groupsPerNode disjoint groups, each with devices
// on the same node, cross nodes at once: the contention rule's φ divides the bandwidth
// (auto: ⌈groupsPerNode / NICs⌉ of the busiest node of devs; none: 1; fixed: Flows). A
// link inside one node is returned as it is.
func (c *Cluster) Contended(l Link, devs []int, groupsPerNode int) Link {
	return l.Shared(c.Phi(l, devs, groupsPerNode))
}

// Phi returns the contention coefficient φ that Contended applies.
func (c *Cluster) Phi(l Link, devs []int, groupsPerNode int) float64 {
	if !l.InterNode {
		return 1
	}
	switch c.Contention.Mode {
	case ContentionNone:
		return 1
	case ContentionFixed:
		return c.Contention.Flows
	}
	nics := math.MaxInt
	for _, d := range devs {
		nics = min(nics, c.Nodes[c.nodeOf[d]].NICs)
	}
	return math.Max(1, math.Ceil(float64(groupsPerNode)/float64(nics)))
}

// Range returns the devices first, first+1, ..., first+n−1.
func Range(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// RingAllReduce is the ring all-reduce of a buffer of bytes (the whole buffer) over p
// devices: 2(p−1)(α + (bytes/p)·β) (spec §2.4; AMP's Eq. 3 with α = 0).
func RingAllReduce(p int, bytes float64, l Link) float64 {
	if p <= 1 {
		return 0
	}
	return 2 * float64(p-1) * l.Time(bytes/float64(p))
}

// RingAllGather is the ring all-gather over p devices where each contributes a piece of
// pieceBytes: (p−1)(α + pieceBytes·β) (spec §2.4; the piece, not the whole buffer).
func RingAllGather(p int, pieceBytes float64, l Link) float64 {
	if p <= 1 {
		return 0
	}
	return float64(p-1) * l.Time(pieceBytes)
}

// P2P is one point-to-point message of bytes: α + bytes·β.
func P2P(bytes float64, l Link) float64 { return l.Time(bytes) }
