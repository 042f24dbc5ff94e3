package pybind

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profilearrow"
)

// ProfileChain returns the chain aggregated from the profile file at filePath (not stored)
// as chainplan.chain/v1 JSON, so that Python can hand an unstored profile to the entry
// points that take a chain (Frontier, MinBudget).
func ProfileChain(filePath string) (chain string, err error) {
	defer recoverError(&err)
	c, err := readProfileChain(filePath)
	if err != nil {
		return "", codedError(err)
	}
	b, err := c.MarshalIndent()
	return string(b), codedError(err)
}

// readProfileChain reads and validates a profile file and aggregates it to a chain.
func readProfileChain(filePath string) (*chainplan.Chain, error) {
	prof, err := readProfile(filePath)
	if err != nil {
		return nil, err
	}
	return prof.Chain()
}

// readProfile reads and validates a profile file.
func readProfile(filePath string) (*profilearrow.Profile, error) {
	data, err := chainplan.ReadInput(filePath, profilearrow.Want)
	if err != nil {
		return nil, fileError(err)
	}
	prof, err := profilearrow.Read(data)
	if err != nil {
		return nil, fileError(err)
	}
	return prof, nil
}
