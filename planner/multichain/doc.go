// Package multichain plans the rematerialization (activation checkpointing) of K towers
// joined at the loss: the image and text towers of a CLIP-style dual encoder, the two or
// three copies of one tower in a Siamese or triplet network (chainplan.MultiChain).
//
// Source: A. Shilova, Memory Saving Strategies for Deep Neural Network Training, PhD thesis,
// Université de Bordeaux, 2021, chapter 1 ("Multi-Chain Rematerialization"); the
// implementable specification is shared/specs/multichain.md, cited as "spec §x.y" below.
//
// Model (spec §1): K chains whose forward and backward phases are independent, joined by
// one loss that needs every tower output at once. In the thesis's model every value (tower
// input, activation, gradient) takes one memory slot, the loss runs once, and a backward
// B_q of the automatic-differentiation model consumes a_{q−1} and δ_q. The package has:
//
//   - the exact dynamic program of Theorem 3 (spec §5) with its heterogeneous-time
//     extension (spec §6): per-stage times, uniform sizes, state (R, μ) of the remaining
//     lengths and the slots, b derived from R, O(μmax·Π(L_j+1)·ΣL_j) time;
//   - Opt_0 and its heterogeneous-time form AC_j (the adjoint chain of Griewank and
//     Walther), the building block of the last segment of each decision;
//   - the smallest memory of Lemma 2, computed directly;
//   - heuristic H0 of spec §6: the dynamic program on slots of the largest activation,
//     with the reserve R of spec §9.2 for the transients the slot model ignores, which
//     makes its plans fit in bytes by construction;
//   - heuristic H1 of spec §6: rotor on the towers concatenated into one chain, in every
//     order (K ≤ 4), each tower carrying the tensors of the others;
//
// and Solve returns the faster plan of the two, replayed in bytes by the multi-branch
// simulator (simulate.RunMulti) before it is returned (Options.Method picks one of them).
//
// Budgets are totals in bytes that count every tower input (spec §10.1): unlike rotor's
// DP, whose budget excludes a_0, the slot count m of the dynamic program includes the K
// inputs, every checkpoint, the working values and the gradients.
package multichain
