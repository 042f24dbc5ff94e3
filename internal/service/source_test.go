package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// sourceOf reads a source's JSON form as pybind receives it.
func sourceOf(t *testing.T, doc string) service.Source {
	t.Helper()
	var src service.Source
	if err := json.Unmarshal([]byte(doc), &src); err != nil {
		t.Fatalf("source %s: %v", doc, err)
	}
	return src
}

// TestResolveEachKind: every kind of source resolves to the input it names, the same chain
// whichever way the profile came.
func TestResolveEachKind(t *testing.T) {
	ctx := context.Background()
	s := newService(t) // holds run 1: resnet_file.arrow
	profilePath := filepath.Join(profilesDir, "resnet_file.arrow")
	chainPath := filepath.Join(profilesDir, "resnet.chain.json")
	chainText, err := os.ReadFile(chainPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := chainplan.ParseChain(chainText)
	if err != nil {
		t.Fatal(err)
	}
	branch := *c
	branch.Loss = chainplan.Loss{} // the joint loss is the bundle's
	bundle, err := (&chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: []chainplan.Chain{branch, branch},
		Loss: c.Loss}).MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	bundlePath := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(bundlePath, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(string(chainText))
	// The same towers as files: one chain file per tower and the joint loss's file.
	branchPath, lossPath := writeTowerFiles(t, branch, c.Loss)
	towers := `{"towers": {"chains": ["` + branchPath + `", "` + branchPath + `"], "loss": "` + lossPath + `"}}`
	for _, tt := range []struct {
		name, doc  string
		run        int64
		profile    bool
		chain, two bool
		named      string
		// assembled: the input is built from several files (towers), so it has neither one
		// file nor one document.
		assembled bool
	}{
		{name: "run", doc: `{"run_id": 1}`, run: 1},
		{name: "profile_path", doc: `{"profile_path": "` + profilePath + `"}`, profile: true},
		{name: "path to a profile", doc: `{"path": "` + profilePath + `"}`, profile: true},
		{name: "chain_path", doc: `{"chain_path": "` + chainPath + `"}`, chain: true, named: "resnet.chain"},
		{name: "path to a chain", doc: `{"path": "` + chainPath + `"}`, chain: true, named: "resnet.chain"},
		{name: "path to a bundle", doc: `{"path": "` + bundlePath + `"}`, two: true, named: "two"},
		{name: "inline chain", doc: `{"chain": ` + string(chainText) + `}`, chain: true},
		{name: "inline chain text", doc: `{"chain": ` + string(text) + `}`, chain: true},
		{name: "inline bundle", doc: `{"chain": ` + string(bundle) + `}`, two: true},
		{name: "towers", doc: towers, two: true, assembled: true},
		{name: "towers of a bundle", doc: `{"towers": {"chains": ["` + bundlePath + `"]}}`, two: true, named: "two"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := service.Resolve(ctx, s, sourceOf(t, tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if in.RunID != tt.run || (in.Profile != nil) != tt.profile || (in.Chain != nil) != tt.chain ||
				(in.MultiChain != nil) != tt.two || (tt.named != "" && in.Name != tt.named) || (in.File != "") != (tt.run == 0 && !strings.HasPrefix(tt.name, "inline") && !tt.assembled) {
				t.Fatalf("Resolve = run %d, profile %v, chain %v, bundle %v, name %q", in.RunID, in.Profile != nil,
					in.Chain != nil, in.MultiChain != nil, in.Name)
			}
			if (in.Document != nil) != ((in.Chain != nil || in.MultiChain != nil) && !tt.assembled) {
				t.Fatalf("Document = %.40q for a chain %v, a bundle %v", in.Document, in.Chain != nil, in.MultiChain != nil)
			}
			towers, err := in.Towers()
			if err != nil || towers != tt.two {
				t.Fatalf("Towers() = %v, %v; want %v", towers, err, tt.two)
			}
			if tt.two {
				if mc, err := in.MultiChainOf(ctx); err != nil || mc.K() != 2 || mc.Loss != c.Loss ||
					mc.SumTime() != (&chainplan.MultiChain{Branches: []chainplan.Chain{branch, branch}, Loss: c.Loss}).SumTime() {
					t.Fatalf("MultiChainOf: %+v, %v", mc, err)
				}
				if _, err := in.ChainOf(ctx); !errors.Is(err, chainplan.ErrUnsupported) {
					t.Fatalf("ChainOf of a bundle: %v, want ErrUnsupported", err)
				}
				return
			}
			got, err := in.ChainOf(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Stages) != len(c.Stages) {
				t.Fatalf("%d stages, want %d", len(got.Stages), len(c.Stages))
			}
			if _, err := in.MultiChainOf(ctx); !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("MultiChainOf of one chain: %v, want ErrUnsupported", err)
			}
			if (tt.run != 0 || tt.profile) != (in.InputShape() != nil) {
				t.Fatalf("InputShape() = %v", in.InputShape())
			}
		})
	}
}

// TestResolveErrors: each bad source is refused with an error that names the problem.
func TestResolveErrors(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": "chainplan.chain/v1", "stages": "no"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, doc string
		is        error
		says      string
	}{
		{"neither", `{"db_env": "/x.db"}`, service.ErrBadInput, "give exactly one of run_id, profile_path, chain_path, path, chain and towers (got none)"},
		{"both", `{"run_id": 1, "path": "a.json"}`, service.ErrBadInput, "(got run_id, path)"},
		{"missing run", `{"run_id": 99}`, chainplan.ErrNotFound, "99"},
		{"missing file", `{"path": "` + filepath.Join(dir, "missing.json") + `"}`, chainplan.ErrNotFound,
			"missing.json\" is not an existing file"},
		{"a run id as a string", `{"path": "7"}`, chainplan.ErrNotFound, "for the stored run 7 pass the integer 7"},
		{"a folder", `{"path": "` + dir + `"}`, chainplan.ErrInputFile, "is a directory"},
		{"missing profile", `{"profile_path": "` + filepath.Join(dir, "p.arrow") + `"}`, chainplan.ErrInputFile, "p.arrow"},
		{"missing chain file", `{"chain_path": "` + filepath.Join(dir, "c.json") + `"}`, chainplan.ErrInputFile, "c.json"},
		{"invalid chain", `{"path": "` + bad + `"}`, chainplan.ErrInvalidChain, "bad.json"},
		{"invalid inline chain", `{"chain": "{}"}`, chainplan.ErrInvalidChain, ""},
		{"not a profile", `{"profile_path": "` + bad + `"}`, nil, "bad.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := service.Resolve(ctx, s, sourceOf(t, tt.doc))
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Resolve(%s) = %v; want %v saying %q", tt.doc, err, tt.is, tt.says)
			}
		})
	}
	// The JSON form refuses what no source has, naming the field.
	for doc, says := range map[string]string{
		`{"run_id": 0}`:    "run_id must be a positive integer (got 0)",
		`{"run": 1}`:       `unknown field "run"`,
		`{"chain": 3}`:     "chain",
		`{"run_id": "1"}`:  "run_id",
		`{"path": ["a"]}`:  "path",
		`{"run_id": -4}`:   "(got -4)",
		`{"home": 1}`:      "home",
		`{"chain": "\x"}`:  "",
		`{"profile_path":`: "",
	} {
		var src service.Source
		if err := json.Unmarshal([]byte(doc), &src); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("source %s: %v, want an error saying %q", doc, err, says)
		}
	}
	// A stored run needs its database.
	if _, err := service.Resolve(ctx, nil, sourceOf(t, `{"run_id": 1}`)); err == nil {
		t.Error("a stored run resolved without a database")
	}
}
