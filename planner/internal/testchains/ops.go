package testchains

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chainplan/chainplan"
)

// Ops reads a sequence written compactly, "Fck1 Fall2 Fnone3 B3", as the spec's test
// vectors print them. It panics on a malformed operation: the sequences are the tests' own.
func Ops(s string) []chainplan.Op {
	kinds := map[string]chainplan.OpKind{"Fall": chainplan.FAll, "Fck": chainplan.FCk, "Fnone": chainplan.FNone, "B": chainplan.B}
	var ops []chainplan.Op
	for _, f := range strings.Fields(s) {
		i := strings.IndexAny(f, "0123456789")
		k, ok := kinds[f[:max(i, 0)]]
		st, err := strconv.Atoi(f[max(i, 0):])
		if i < 0 || !ok || err != nil {
			panic(fmt.Sprintf("testchains: bad op %q", f))
		}
		ops = append(ops, chainplan.Op{Kind: k, Stage: st})
	}
	return ops
}

// Transfer builds a transfer of a tensor named as in JSON ("a0", "abar2"). It panics on a
// malformed name.
func Transfer(dir chainplan.TransferDir, tensor string, bytes int64, anchor int) chainplan.Transfer {
	t, err := chainplan.ParseTensor(tensor)
	if err != nil {
		panic(err)
	}
	return chainplan.Transfer{Dir: dir, Tensor: t, Bytes: bytes, Anchor: anchor}
}
