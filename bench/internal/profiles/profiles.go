// Package profiles reads the chains the benchmark commands under bench/ evaluate.
package profiles

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile/pipedream"
)

// PipeDream linearizes testdata/pipedream/NAME.graph.txt as `chainplan import pipedream`
// does (run from the repository root).
func PipeDream(name string) (*chainplan.Chain, error) {
	f, err := os.Open(filepath.Join("testdata", "pipedream", name+".graph.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := pipedream.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	imp, err := pipedream.Linearize(g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return imp.Chain, nil
}
