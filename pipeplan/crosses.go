package pipeplan

// Crosses reports whether the output of stages[k] goes to another device: stage k+1 exists
// and is on another device, so that the boundary costs a CF and a CB on a link (each
// Transfer(stages[k].Last)) and a buffer on both sides.
func Crosses(stages []Stage, k int) bool {
	return k+1 < len(stages) && stages[k].GPU != stages[k+1].GPU
}
