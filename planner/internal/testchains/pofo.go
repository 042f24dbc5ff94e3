package testchains

import "github.com/chainplan/chainplan"

// PofoExample is the worked example of pofo spec §5.8: L = 4 plus the loss, with every size
// multiplied by scale (the spec's memory unit is scale bytes; a bandwidth of β units per
// time unit is β·scale bytes per time unit). Scale 2 makes the spec's budget 15.5 a whole
// number of bytes.
func PofoExample(scale int64) *chainplan.Chain {
	st := func(uF, uB float64, a, abar, o int64) chainplan.Stage {
		return chainplan.Stage{FwdTime: uF, BwdTime: uB, OutBytes: a * scale, SavedBytes: abar * scale,
			FwdTmpBytes: o * scale, BwdTmpBytes: o * scale}
	}
	return &chainplan.Chain{
		Format:     chainplan.ChainFormat,
		InputBytes: 2 * scale,
		Stages: []chainplan.Stage{
			st(1, 2, 4, 6, 1),
			st(2, 4, 2, 3, 0),
			st(1, 2, 4, 7, 1),
			st(2, 4, 1, 2, 0),
		},
		Loss: chainplan.Loss{FwdTime: 0.5, BwdTime: 0.5},
	}
}
