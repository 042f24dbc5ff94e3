package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// writeTowerFiles writes a tower (a chain without a loss) and a joint loss as the files a
// towers source names, and returns their paths.
func writeTowerFiles(t *testing.T, branch chainplan.Chain, loss chainplan.Loss) (branchPath, lossPath string) {
	t.Helper()
	dir := t.TempDir()
	doc, err := branch.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	lossDoc, err := json.Marshal(loss)
	if err != nil {
		t.Fatal(err)
	}
	branchPath, lossPath = filepath.Join(dir, "tower.json"), filepath.Join(dir, "loss.json")
	for path, data := range map[string][]byte{branchPath: doc, lossPath: lossDoc} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return branchPath, lossPath
}

// towerChain is a small valid chain; loss sets its loss (a tower has none).
func towerChain(t *testing.T, loss chainplan.Loss) chainplan.Chain {
	t.Helper()
	c, err := chainplan.ParseChain([]byte(`{"format": "chainplan.chain/v1", "input_bytes": 8, "stages": [
		{"name": "a", "fwd_time": 1, "bwd_time": 2, "out_bytes": 8, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c.Loss = loss
	return *c
}

// TestResolveTowersKeepInputGrad: the towers' keep_input_grad reaches the bundle, and one
// chain file given as towers is one tower (what solve --algo multichain plans).
func TestResolveTowersKeepInputGrad(t *testing.T) {
	ctx := context.Background()
	loss := chainplan.Loss{FwdTime: 1, BwdTime: 1}
	tower, lossPath := writeTowerFiles(t, towerChain(t, chainplan.Loss{}), loss)
	in, err := service.Resolve(ctx, nil, service.Source{Towers: &service.TowerFiles{Chains: []string{tower, tower},
		Loss: lossPath, KeepInputGrad: []bool{true, false}}})
	if err != nil {
		t.Fatal(err)
	}
	if mc := in.MultiChain; mc == nil || mc.K() != 2 || !slices.Equal(mc.KeepInputGrad, []bool{true, false}) || mc.Loss != loss {
		t.Fatalf("towers resolved to %+v", in.MultiChain)
	}
	in, err = service.Resolve(ctx, nil, service.Source{Towers: &service.TowerFiles{Chains: []string{tower}}})
	if err != nil || in.MultiChain == nil || in.MultiChain.K() != 1 || in.MultiChain.Loss != (chainplan.Loss{}) {
		t.Fatalf("one tower: %+v, %v", in, err)
	}
}

// TestResolveTowersErrors: each bad set of tower files is refused naming the file or the
// field; a tower file that is missing or invalid gets the error a chain_path source gets.
func TestResolveTowersErrors(t *testing.T) {
	ctx := context.Background()
	loss := chainplan.Loss{FwdTime: 1, BwdTime: 1}
	tower, lossPath := writeTowerFiles(t, towerChain(t, chainplan.Loss{}), loss)
	withLoss, _ := writeTowerFiles(t, towerChain(t, loss), loss)
	dir := t.TempDir()
	bundleDoc, err := (&chainplan.MultiChain{Format: chainplan.MultiChainFormat,
		Branches: []chainplan.Chain{towerChain(t, chainplan.Loss{})}, Loss: loss}).MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	bundle, badLoss, invalid := filepath.Join(dir, "bundle.json"), filepath.Join(dir, "badloss.json"), filepath.Join(dir, "bad.json")
	for path, data := range map[string]string{bundle: string(bundleDoc), badLoss: `{"fwd_time": -1}`,
		invalid: `{"format": "chainplan.chain/v1", "stages": "no"}`} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.json")
	towers := func(chains []string, loss string, keep ...bool) service.Source {
		return service.Source{Towers: &service.TowerFiles{Chains: chains, Loss: loss, KeepInputGrad: keep}}
	}
	for _, tt := range []struct {
		name string
		src  service.Source
		is   error
		says string
	}{
		{"no chains", towers(nil, lossPath), service.ErrBadInput, "source: towers: chains is empty"},
		{"a bundle and a loss", towers([]string{bundle}, lossPath), service.ErrBadInput, "bundle.json is a bundle: it holds its loss"},
		{"a bundle and keep", towers([]string{bundle}, "", true), service.ErrBadInput, "bundle.json is a bundle: it holds its loss"},
		{"a bundle among towers", towers([]string{tower, bundle}, lossPath), service.ErrBadInput,
			"bundle.json is a bundle: give it alone, or one chain file per tower"},
		{"a tower with a loss", towers([]string{tower, withLoss}, lossPath), service.ErrBadInput, "(branch 2) has a loss of its own"},
		{"keep count", towers([]string{tower, tower}, lossPath, true), service.ErrBadInput,
			"keep_input_grad (--keep-input-grad) has 1 values for 2 towers"},
		{"missing loss", towers([]string{tower}, missing), chainplan.ErrInputFile, "source: towers: loss: "},
		{"invalid loss", towers([]string{tower}, badLoss), chainplan.ErrInvalidChain, "source: towers: loss " + badLoss},
		{"several kinds", service.Source{ChainPath: tower, Towers: &service.TowerFiles{}}, service.ErrBadInput,
			"(got chain_path, towers)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := service.Resolve(ctx, nil, tt.src)
			if err == nil || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Resolve = %v; want %v saying %q", err, tt.is, tt.says)
			}
		})
	}
	// A tower file that is missing or invalid: the same error as the file as a chain_path.
	for _, path := range []string{missing, invalid} {
		_, asChain := service.Resolve(ctx, nil, service.Source{ChainPath: path})
		_, asTower := service.Resolve(ctx, nil, towers([]string{tower, path}, lossPath))
		if asChain == nil || asTower == nil || asChain.Error() != asTower.Error() {
			t.Errorf("%s: as a tower %v, as a chain %v", path, asTower, asChain)
		}
	}
	// The JSON form reads towers strictly.
	var src service.Source
	if err := json.Unmarshal([]byte(`{"towers": {"chain": ["a.json"]}}`), &src); err == nil ||
		!strings.Contains(err.Error(), `unknown field "chain"`) {
		t.Errorf("towers with an unknown field: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"towers": {"chains": ["a.json"], "loss": "l.json", "keep_input_grad": [true]}}`), &src); err != nil ||
		src.Towers == nil || src.Towers.Loss != "l.json" || !slices.Equal(src.Towers.KeepInputGrad, []bool{true}) {
		t.Errorf("towers: %+v, %v", src.Towers, err)
	}
}
