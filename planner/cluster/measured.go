package cluster

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
)

// The links a measurement can be of (the store's bandwidths.link).
const (
	LinkIntra = "intra" // between two devices of one node: a node's IntraBandwidth
	LinkInter = "inter" // between nodes: a node's network interface, InterBandwidth
	LinkHost  = "host"  // device↔host copies: HostBandwidth
)

// Measurement is a measured bandwidth of one kind of link, as the store records it for a
// run (a row of its bandwidths table).
type Measurement struct {
	ID        int64   // the row (bandwidth_id), named in messages and output
	Link      string  // LinkIntra, LinkInter or LinkHost
	Device    string  // the device type it was measured on (a node's gpu), or the run's device ("cuda:0", "cpu")
	BytesPerS float64 // what was measured
}

// MeasuredLink is a node's link whose bandwidth a measurement replaced: what the output
// lists so that a prediction says which figures it used.
type MeasuredLink struct {
	Node              string  `json:"node"`
	Link              string  `json:"link"`
	NominalBytesPerS  float64 `json:"nominal_bytes_per_s"`  // the cluster file's
	MeasuredBytesPerS float64 `json:"measured_bytes_per_s"` // the store's
	BandwidthID       int64   `json:"bandwidth_id"`
}

// WithMeasured returns c with measured bandwidths in place of the file's, the links
// replaced, and notes on measurements left unused. ms is newest first; for each node and
// kind of link the first that applies is used. A measurement applies to a node when its
// Device is the node's device type, or to every node when the cluster has one device type
// (the run it was recorded with was profiled on the cluster's devices, so a device such as
// "cuda:0" is theirs). Only links the file describes are replaced (a nonzero bandwidth:
// a one-device node has no intra-node link); a cluster with a bandwidth matrix keeps its
// matrix for intra- and inter-node links, with a note. A measurement that would be used
// and is not a positive, finite bandwidth is an error naming it (chainplan.ErrUnsupported:
// bad input). c is left unchanged.
func (c *Cluster) WithMeasured(ms []Measurement) (*Cluster, []MeasuredLink, []string, error) {
	var notes []string
	if len(ms) == 0 {
		return c, nil, nil, nil
	}
	oneType := len(c.DeviceTypes()) == 1
	d := *c
	d.Nodes = slices.Clone(c.Nodes)
	var used []MeasuredLink
	skipped := map[int64]bool{}
	for i := range d.Nodes {
		n := &d.Nodes[i]
		for _, f := range []struct {
			link string
			bw   *float64
		}{{LinkIntra, &n.IntraBandwidth}, {LinkInter, &n.InterBandwidth}, {LinkHost, &n.HostBandwidth}} {
			if *f.bw == 0 {
				continue
			}
			k := slices.IndexFunc(ms, func(m Measurement) bool {
				return m.Link == f.link && (m.Device == n.DeviceType || oneType && sameKind(m.Device, n.DeviceType))
			})
			if k < 0 {
				continue
			}
			m := ms[k]
			if f.link != LinkHost && c.BandwidthMatrix != nil {
				if !skipped[m.ID] {
					skipped[m.ID] = true
					notes = append(notes, fmt.Sprintf("measured %s-node bandwidth %d (%s) not used: the cluster's bandwidth_matrix gives every pair's",
						f.link, m.ID, bandwidthText(m.BytesPerS)))
				}
				continue
			}
			if math.IsNaN(m.BytesPerS) || math.IsInf(m.BytesPerS, 0) || m.BytesPerS <= 0 {
				return nil, nil, nil, fmt.Errorf("%w: measured bandwidth %d (the store's bandwidths row of the %s link, device %q): "+
					"%v bytes/s is not a positive, finite bandwidth; delete the row, or plan with the cluster file's bandwidths "+
					"(--nominal-links, nominal_links=True)", chainplan.ErrUnsupported, m.ID, m.Link, m.Device, m.BytesPerS)
			}
			used = append(used, MeasuredLink{Node: n.Name, Link: f.link, NominalBytesPerS: *f.bw, MeasuredBytesPerS: m.BytesPerS,
				BandwidthID: m.ID})
			*f.bw = m.BytesPerS
		}
	}
	for _, m := range ms {
		if !skipped[m.ID] && !c.describes(m, oneType) {
			notes = append(notes, fmt.Sprintf("measured %s bandwidth %d (%s, device %q) not used: no node of the cluster has that link and device",
				m.Link, m.ID, bandwidthText(m.BytesPerS), m.Device))
		}
	}
	if len(used) == 0 {
		return c, nil, notes, nil
	}
	return &d, used, notes, nil
}

// describes reports whether some node of c has m's link (a nonzero bandwidth in the file)
// and a device m's device can be (a newer row of the same link may still be the one used).
func (c *Cluster) describes(m Measurement, oneType bool) bool {
	for _, n := range c.Nodes {
		bw := map[string]float64{LinkIntra: n.IntraBandwidth, LinkInter: n.InterBandwidth, LinkHost: n.HostBandwidth}[m.Link]
		if bw != 0 && (m.Device == n.DeviceType || oneType && sameKind(m.Device, n.DeviceType)) {
			return true
		}
	}
	return false
}

// sameKind reports whether a run's device (as the store records it: "cpu", "cuda:0") can be
// a cluster's device type when the cluster has one: a CPU run only a type named for the CPU
// ("CPU-thread"), any other run any type (its devices were profiled on the cluster's). A
// gloo link measured between CPU ranks says nothing of a GPU cluster's links.
func sameKind(device, deviceType string) bool {
	cpu := func(s string) bool { return strings.HasPrefix(strings.ToLower(s), "cpu") }
	return cpu(device) == cpu(deviceType)
}

// bandwidthText writes bytes per second in GB/s, as notes give them.
func bandwidthText(bps float64) string { return fmt.Sprintf("%.4g GB/s", bps/1e9) }
