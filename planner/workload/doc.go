// Package workload is the model of a network that the parallel planners (advise, search3d)
// plan: its layers with their times at the measured batch (and at other batch sizes when
// profiled), activation and weight sizes per sample, the convolutions and linear layers
// that tensor and spatial parallelism split, and the optimizer's step time and state.
//
// Source: shared/specs/paradl_amp_timeprest.md §5.1 (the shared data model), §2.3 (ParaDL's
// layer abstraction: |x_l|, |y_l|, |w_l|, |bi_l| per sample, FW_l, BW_l per sample, WU_l
// per iteration) and §3.2 (AMP's per-layer time, boundary volume and parameters).
//
// A Model comes from a chain file and the batch it was measured at (FromChain: times,
// activation sizes, weights), or from a stored profile (FromProfile), whose parallel fields
// add shapes, parameter and bias counts, module attributes, times at several batch sizes and
// the optimizer. What a source lacks is recorded in Model.Known; a planner that needs a
// missing field returns a *MissingError naming it (Model.Need).
//
// Sizes are bytes, as in the chain: ParaDL's element counts times δ. Times are seconds.
// Layer times at another batch b are interpolated linearly between profiled batch sizes and
// scaled proportionally beyond them (TimesAt); trap §2.12-3 is why the times at several
// batch sizes exist: a per-sample time depends on the batch.
package workload
