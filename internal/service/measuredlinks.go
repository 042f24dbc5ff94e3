package service

import (
	"context"
	"fmt"
	"strings"

	"github.com/chainplan/chainplan/planner/cluster"
)

// plannedCluster is the cluster the advisors plan on (issue 34): for a stored run, the
// cluster file's with the bandwidths measured for the run (the store's bandwidths rows of
// its links) in place of the file's nominal ones, by cluster.WithMeasured's matching; the
// file's own when in.NominalLinks, for a source that is not a stored run, or when no row
// applies. It returns the links replaced and notes saying so. An absurd stored value
// (≤ 0, NaN, an infinity) of a row that would be used is bad input naming the row.
func (s *Service) plannedCluster(ctx context.Context, in ParallelInput) (*cluster.Cluster, []cluster.MeasuredLink, []string, error) {
	if s == nil || in.RunID <= 0 || in.NominalLinks {
		return in.Cluster, nil, nil, nil
	}
	rows, err := s.db.LinkBandwidths(ctx, in.RunID)
	if err != nil {
		return nil, nil, nil, err
	}
	ms := make([]cluster.Measurement, len(rows))
	for i, r := range rows {
		ms[i] = cluster.Measurement{ID: r.ID, Link: r.Link, Device: r.Device, BytesPerS: r.BytesPerS}
	}
	c, links, notes, err := in.Cluster.WithMeasured(ms)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("run %d: %w", in.RunID, err)
	}
	if len(links) > 0 {
		notes = append(notes, linksNote(in.RunID, links))
	}
	return c, links, notes, nil
}

// linksNote says which links were measured, grouping the nodes that one row replaced
// alike: "link bandwidths measured with run 3 (the store's bandwidths table) in place of
// the cluster file's: intra-node of host: 0.45 GB/s (bandwidth 2; file 1.25 GB/s); ...".
func linksNote(runID int64, links []cluster.MeasuredLink) string {
	type key struct {
		link              string
		id                int64
		nominal, measured float64
	}
	var order []key
	nodes := map[key][]string{}
	for _, l := range links {
		k := key{l.Link, l.BandwidthID, l.NominalBytesPerS, l.MeasuredBytesPerS}
		if _, seen := nodes[k]; !seen {
			order = append(order, k)
		}
		nodes[k] = append(nodes[k], l.Node)
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%s of %s: %.4g GB/s (bandwidth %d; file %.4g GB/s)", linkName(k.link),
			strings.Join(nodes[k], ", "), k.measured/1e9, k.id, k.nominal/1e9)
	}
	return fmt.Sprintf("link bandwidths measured with run %d (the store's bandwidths table) in place of the cluster file's "+
		"(--nominal-links keeps the file's): %s", runID, strings.Join(parts, "; "))
}

func linkName(link string) string {
	switch link {
	case cluster.LinkIntra:
		return "intra-node"
	case cluster.LinkInter:
		return "inter-node"
	}
	return "device-host"
}
