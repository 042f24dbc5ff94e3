// Package baseline builds the schedules chainplan compares rotor against: PyTorch's default
// (store everything, recompute nothing) and PyTorch's checkpoint_sequential (rotor spec
// §4.3). The revolve baseline is a variant of the rotor DP (rotor.Options.Revolve).
//
// Baselines are not discretized: a baseline schedule fits a budget when its exact peak in
// bytes, replayed by package simulate, does.
package baseline
