package amp_test

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/calibration"
)

// measuredStrategy is one strategy AMP ran, with its measured seconds per iteration (the
// paper's appendix Tables 6-9, shared/specs/paradl_amp_timeprest.md §3.8): Megatron's five
// then AMP's five per cluster.
type measuredStrategy struct {
	mbs, tmp, pp, dp int
	s                float64
}

var ampMeasured = map[string][]measuredStrategy{
	"amp-homogeneous.yaml": {{1, 1, 1, 16, 1.32}, {2, 1, 2, 8, 1.37}, {2, 2, 1, 8, 1.58}, {4, 1, 2, 8, 1.63}, {4, 2, 1, 8, 1.53},
		{1, 1, 2, 8, 1.28}, {1, 1, 4, 4, 1.20}, {1, 1, 8, 2, 1.23}, {2, 1, 2, 8, 1.38}, {1, 1, 16, 1, 1.55}},
	"amp-het-cluster.yaml": {{2, 1, 2, 8, 2.27}, {4, 1, 2, 8, 2.32}, {8, 1, 4, 4, 1.97}, {8, 2, 2, 4, 2.43}, {16, 2, 4, 2, 2.34},
		{1, 1, 4, 4, 1.47}, {1, 1, 8, 2, 1.28}, {1, 1, 16, 1, 1.52}, {2, 1, 4, 4, 1.52}, {2, 1, 8, 2, 1.54}},
}

// predictFixture runs search3d on a fixture cluster (GPT-2 medium, gbs 32, no memory
// filter: AMP's setting) under cal, and returns the candidate of each measured strategy's
// degrees (search3d's cut for them).
func predictFixture(t *testing.T, name string, cal *calibration.Calibration) []amp.Candidate {
	t.Helper()
	o := amp.Options{GlobalBatch: 32, MemoryCheck: amp.MemoryOff, TopK: -1, Calibration: cal}
	if name == "amp-het-cluster.yaml" {
		o.DeviceSpeed = t4Speed
	}
	res, err := amp.Search(gpt2Model(t), readCluster(t, name), o)
	if err != nil {
		t.Fatal(err)
	}
	var out []amp.Candidate
	for _, m := range ampMeasured[name] {
		found := false
		for _, c := range res.Candidates {
			if c.PP == m.pp && c.DP == m.dp && c.TMP == m.tmp && c.MBS == m.mbs {
				out, found = append(out, c), true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no candidate pp=%d dp=%d tmp=%d mbs=%d", name, m.pp, m.dp, m.tmp, m.mbs)
		}
	}
	return out
}

// fitOn fits a calibration on the fixture strategies idx of an uncalibrated prediction.
func fitOn(t *testing.T, name string, pred []amp.Candidate, idx []int) *calibration.Calibration {
	t.Helper()
	var pairs []calibration.Pair
	for _, i := range idx {
		pairs = append(pairs, calibration.Pair{ComputeS: pred[i].ComputeS, CommS: pred[i].CommS, MeasuredS: ampMeasured[name][i].s})
	}
	c, err := calibration.Fit(pairs)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func scores(name string, pred []amp.Candidate, idx []int) (acc, rho float64) {
	var p, m []float64
	for _, i := range idx {
		p, m = append(p, pred[i].IterationTimeS), append(m, ampMeasured[name][i].s)
	}
	return calibration.Accuracy(p, m), calibration.Spearman(p, m)
}

// Calibration from measured runs makes search3d's predictions of AMP's measured strategies
// accurate where the analytic GPT-2 chain is off by 2-4×, on strategies it was not fitted
// on (issue 34): (1) each strategy predicted by a fit on the cluster's nine others; (2)
// fitted on Megatron's five, AMP's five predicted. The calibrated predictions come from
// search3d run under the calibration (Options.Calibration), not from the fit's formula.
func TestCalibrationOnAMPFixtures(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, name := range []string{"amp-homogeneous.yaml", "amp-het-cluster.yaml"} {
		pred := predictFixture(t, name, nil)
		for i, c := range pred {
			if d := c.ComputeS + c.CommS - c.IterationTimeS; d > 1e-12 || d < -1e-12 || c.ComputeS <= 0 || c.CommS < 0 {
				t.Fatalf("%s strategy %d: compute %v + comm %v ≠ %v", name, i, c.ComputeS, c.CommS, c.IterationTimeS)
			}
		}
		acc0, rho0 := scores(name, pred, all)
		// (1) Leave one out.
		var p, m []float64
		for i := range all {
			rest := append(append([]int{}, all[:i]...), all[i+1:]...)
			cal := fitOn(t, name, pred, rest)
			p, m = append(p, predictFixture(t, name, cal)[i].IterationTimeS), append(m, ampMeasured[name][i].s)
		}
		acc1, rho1 := calibration.Accuracy(p, m), calibration.Spearman(p, m)
		t.Logf("%s, each held out: accuracy %.3f → %.3f, Spearman %.3f → %.3f", name, acc0, acc1, rho0, rho1)
		if acc0 > 0.5 || acc1 < 0.85 {
			t.Errorf("%s, each held out: mean accuracy %.3f uncalibrated, %.3f calibrated; want ≤ 0.5 and ≥ 0.85", name, acc0, acc1)
		}
		// (2) Fitted on Megatron's strategies, AMP's predicted.
		cal := fitOn(t, name, pred, all[:5])
		acc0, rho0 = scores(name, pred, all[5:])
		acc2, rho2 := scores(name, predictFixture(t, name, cal), all[5:])
		t.Logf("%s, fitted on Megatron's (%+v): AMP's accuracy %.3f → %.3f, Spearman %.3f → %.3f", name, *cal, acc0, acc2, rho0, rho2)
		if acc2 < acc0+0.3 || rho2 < rho0-1e-9 {
			t.Errorf("%s, fitted on Megatron's: AMP's accuracy %.3f → %.3f, Spearman %.3f → %.3f; want +0.3 and no worse",
				name, acc0, acc2, rho0, rho2)
		}
		// (3) The other way round, reported in docs/distributed.md, not asserted: AMP's five
		// span 1.20-1.55 s, too narrow a range to extrapolate to Megatron's from.
		cal = fitOn(t, name, pred, all[5:])
		acc0, rho0 = scores(name, pred, all[:5])
		acc3, rho3 := scores(name, predictFixture(t, name, cal), all[:5])
		t.Logf("%s, fitted on AMP's (%s): Megatron's accuracy %.3f → %.3f, Spearman %.3f → %.3f", name, cal.Model, acc0, acc3, rho0, rho3)
	}
}

// A calibration that is not positive is refused naming the option.
func TestCalibrationOptionChecked(t *testing.T) {
	_, err := amp.Search(e1Model(), readCluster(t, "amp-e1.yaml"), amp.Options{GlobalBatch: 8,
		Calibration: &calibration.Calibration{ComputeScale: 1, CommScale: 0}})
	var oe *amp.OptionError
	if !errors.As(err, &oe) || oe.Field != "calibration" {
		t.Fatalf("error %v, want an OptionError on calibration", err)
	}
}
