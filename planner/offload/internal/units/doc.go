// Package units is what the offloading family's dynamic programs and its simulator
// compute on, kept out of package offload's API:
//
//   - Chain, the chain in memory units (pofo spec §1.1-§1.4): stages 1..n with n = L+1
//     (the loss last), activations 0..n, sizes as float64 in units of Unit bytes, indexed
//     as in the spec (index 0 of the per-stage slices unused; δ_ℓ has the size of a_ℓ and
//     a_n = ā_n = 0). The simulator works on the exact chain (unit 1, Exact), the dynamic
//     programs on a chain scaled to their unit (Scaled) or rounded to it (FromDiscrete).
//     Its StoreAllPeak is M_peak of (3.3) in units, which on the exact chain equals the
//     simulators' peak of the store-all sequence (rotor.StoreAllPeak; tested in
//     planner/offload).
//   - Table, the backward phase of POFO, C_Δ(s, t, A, Δ) of pofo spec §4.8 (the optimal
//     time to process stages s..t by persistent rematerialization while Δ bytes of lower
//     stages are prefetched), with the discretization both phases of the POFO dynamic
//     program share: the rounding of states (spec §4.9), the grid of states (Grid) and the
//     memo tables (Store). POFO's forward phase OC reads it for every segment, and
//     OPPORTUNIST rematerializes each group's layers with it at Δ = 0.
package units
