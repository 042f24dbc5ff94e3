// Package simulate replays a checkpointing sequence on a chain, independently of the
// planners, and reports its validity, peak memory and makespan. It is the oracle every
// planner's output is checked against (rotor spec §2.5).
//
// Memory model (rotor spec §2.2): a_0 is present from the start; the current gradient δ_d is
// always stored (d starts at L+1, whose gradient has size 0); an operation needs the data
// already stored, plus its output, plus its temporary overhead. F_all stores ā_ℓ and keeps
// its input; F_ck stores a_ℓ and keeps its input; F_none stores a_ℓ and frees a_{ℓ-1};
// B_ℓ frees ā_ℓ and δ_ℓ, frees a_{ℓ-1} if present (ā_{ℓ-1} stays) and stores δ_{ℓ-1}.
package simulate
