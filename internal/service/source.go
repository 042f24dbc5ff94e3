package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profilearrow"
	"github.com/chainplan/chainplan/store"
)

// Source is the one envelope of what a call plans, simulates or draws, for every family
// and both front ends: exactly one of a stored run, a profile file, a chain (or bundle)
// file, a file of any of these kinds told apart by its content, a chain (or bundle)
// document given inline, or towers given as one chain file per tower and their loss's
// file; and the database a stored run is read from. Python fills it by
// the type of what the user passed and nothing else (chainplan/source.py); the CLI from
// its --run, --profile, --chain, --loss and --keep-input-grad flags. Resolve reads it.
type Source struct {
	// Run is a stored run ("run_id" in JSON: a positive integer; the CLI's RUN may be
	// "latest"). Stored reports whether it is set.
	Run    RunRef
	hasRun bool
	// ProfilePath is a profile file (chainplan.profile/v1 Arrow), read without storing it.
	ProfilePath string
	// ChainPath is a chainplan.chain/v1 (or v2) file, or a chainplan.multichain/v1 bundle.
	ChainPath string
	// Path is a file of any of those kinds, told apart by its content (Arrow's magic for
	// a profile, the format tag for a bundle): what Python sends for a path it was given.
	Path string
	// Chain is a chain or bundle document given inline.
	Chain []byte
	// Towers are towers joined at the loss given as separate files (source_towers.go).
	Towers *TowerFiles
	// DBEnv and Home choose the database of a stored run by service.DBPath's rule (no
	// flag): Python passes $CHAINPLAN_DB and the home folder as it sees them at the call,
	// which the Go runtime loaded into it would not see. (The CLI opens the database its
	// --db names itself and hands Resolve the open Service.)
	DBEnv, Home string
}

// sourceJSON is Source's JSON form: {"run_id": N | "profile_path" | "chain_path" | "path"
// | "chain": document (an object, or its text as a string) | "towers": {"chains": [...],
// "loss", "keep_input_grad": [...]}, "db_env", "home"}.
type sourceJSON struct {
	RunID       *int64          `json:"run_id"`
	ProfilePath string          `json:"profile_path"`
	ChainPath   string          `json:"chain_path"`
	Path        string          `json:"path"`
	Chain       json.RawMessage `json:"chain"`
	Towers      *TowerFiles     `json:"towers"`
	DBEnv       string          `json:"db_env"`
	Home        string          `json:"home"`
}

// UnmarshalJSON reads Source's JSON form strictly: an unknown key, a run id below 1 and a
// chain that is neither a document nor its text are bad input naming the field.
func (s *Source) UnmarshalJSON(data []byte) error {
	var j sourceJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return &inputError{fmt.Sprintf("source: %v", err)}
	}
	*s = Source{ProfilePath: j.ProfilePath, ChainPath: j.ChainPath, Path: j.Path, Towers: j.Towers, DBEnv: j.DBEnv,
		Home: j.Home}
	if j.RunID != nil {
		if *j.RunID < 1 {
			return &inputError{fmt.Sprintf("source: run_id must be a positive integer (got %d)", *j.RunID)}
		}
		s.Run, s.hasRun = RunID(*j.RunID), true
	}
	switch raw := bytes.TrimSpace(j.Chain); {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return &inputError{fmt.Sprintf("source: chain: %v", err)}
		}
		s.Chain = []byte(text)
	case raw[0] == '{':
		s.Chain = raw
	default:
		return &inputError{"source: chain must be a chain or bundle document (an object) or its text (a string), got " +
			string(raw)}
	}
	return nil
}

// RunSource is the source of stored run ref (the CLI's --run), which Resolve reads from
// the open database it is given.
func RunSource(ref RunRef) Source { return Source{Run: ref, hasRun: true} }

// Stored reports whether the source is a stored run, which Resolve reads from an open
// database (DB names it).
func (s Source) Stored() bool { return s.hasRun }

// DB returns the database of a stored run by DBPath's rule.
func (s Source) DB() (string, error) {
	if s.DBEnv == "" && s.Home == "" {
		return DefaultDBPath()
	}
	return DBPath("", s.DBEnv, s.Home)
}

// Given reports whether the source names anything (a call on a stored plan may give only
// the database).
func (s Source) Given() bool {
	return s.hasRun || s.ProfilePath != "" || s.ChainPath != "" || s.Path != "" || len(s.Chain) > 0 || s.Towers != nil
}

// Check reports a source that gives none or several of its kinds, naming them.
func (s Source) Check() error {
	var given []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"run_id", s.hasRun}, {"profile_path", s.ProfilePath != ""}, {"chain_path", s.ChainPath != ""},
		{"path", s.Path != ""}, {"chain", len(s.Chain) > 0}, {"towers", s.Towers != nil}} {
		if k.set {
			given = append(given, k.name)
		}
	}
	if len(given) != 1 {
		got := "none"
		if len(given) > 1 {
			got = strings.Join(given, ", ")
		}
		return &inputError{"source: give exactly one of run_id, profile_path, chain_path, path, chain and towers (got " + got + ")"}
	}
	return nil
}

// Input is a resolved source: a stored run (with the open database it lives in), a
// profile, a chain or a bundle. Its methods give each family what it takes.
type Input struct {
	// RunID is the stored run (0 when the source is not one); Run its provenance.
	RunID int64
	Run   *store.Run
	// Profile is a profile file's content.
	Profile *profilearrow.Profile
	// Chain and MultiChain are a chain's or a bundle's document; Document is its text as
	// given (what a caller that edits the document reads: fields the chain leaves out stay
	// out).
	Chain      *chainplan.Chain
	MultiChain *chainplan.MultiChain
	Document   []byte
	// File is the file the source was read from ("" for a stored run and an inline
	// document); Name what it is called (its base name without extension), the
	// workload's name for the parallel planners.
	File, Name string
	svc        *Service
}

// Resolve reads what src names: the run from svc (which must be the open database
// src.DB() names; nil is refused for a stored run), a file from disk, an inline document.
// Errors name the problem: none or several kinds given, a run that does not exist
// (chainplan.ErrNotFound), a file that is missing (chainplan.ErrNotFound, with the hint
// that a stored run is given by its integer id) or unreadable (chainplan.ErrInputFile), an
// invalid profile, chain or bundle (their readers' errors), towers that do not make a bundle
// (towersInput's).
func Resolve(ctx context.Context, svc *Service, src Source) (*Input, error) {
	if err := src.Check(); err != nil {
		return nil, err
	}
	switch {
	case src.hasRun:
		if svc == nil {
			return nil, errors.New("service: a stored run resolved without its database")
		}
		r, err := svc.Run(ctx, src.Run)
		if err != nil {
			return nil, err
		}
		return &Input{RunID: r.ID, Run: r, svc: svc}, nil
	case src.ProfilePath != "":
		p, err := profilearrow.ReadFile(src.ProfilePath)
		if err != nil {
			return nil, err
		}
		return named(&Input{Profile: p}, src.ProfilePath), nil
	case src.ChainPath != "":
		return chainFileInput(src.ChainPath)
	case src.Path != "":
		return pathInput(src.Path)
	case src.Towers != nil:
		return towersInput(src.Towers)
	}
	return documentInput(src.Chain, "")
}

// chainFileInput reads a chain or a bundle file (a chain_path source, and each file of
// towers).
func chainFileInput(path string) (*Input, error) {
	data, err := chainplan.ReadInput(path, "a chain file ("+chainplan.ChainFormat+" JSON)")
	if err != nil {
		return nil, err
	}
	return documentInput(data, path)
}

// pathInput reads a file of any kind, told apart by its content.
func pathInput(path string) (*Input, error) {
	data, err := chainplan.ReadInput(path, "a profile (Arrow), a chain or a bundle (JSON)")
	if errors.Is(err, os.ErrNotExist) {
		hint := ""
		if digits := strings.TrimSpace(path); digits != "" && strings.Trim(digits, "0123456789") == "" {
			hint = fmt.Sprintf("; for the stored run %s pass the integer %s, not a string", digits, digits)
		}
		return nil, &missingError{fmt.Sprintf("source %q is not an existing file (a profile, a chain or a bundle)%s", path, hint)}
	}
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte("ARROW1")) {
		p, err := profilearrow.Read(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return named(&Input{Profile: p}, path), nil
	}
	return documentInput(data, path)
}

// missingError is a source file that does not exist: chainplan.ErrNotFound, as a run
// that does not exist is, with a message of its own.
type missingError struct{ msg string }

func (e *missingError) Error() string { return e.msg }
func (e *missingError) Unwrap() error { return chainplan.ErrNotFound }

// documentInput reads a chain or a bundle document; path names its file ("" inline).
func documentInput(data []byte, path string) (*Input, error) {
	in := named(&Input{Document: data}, path)
	var err error
	what := "chain"
	if chainplan.IsMultiChain(data) {
		in.MultiChain, err = chainplan.ParseMultiChain(data)
		what = "bundle"
	} else {
		in.Chain, err = chainplan.ParseChain(data)
	}
	if err != nil && path != "" {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err) // chainplan.ReadChain's and ReadMultiChain's words
	}
	return in, err
}

// Service is the open database a stored run was resolved in, nil for any other source.
func (in *Input) Service() *Service { return in.svc }

// named sets in's File and Name from path ("" leaves them empty).
func named(in *Input, path string) *Input {
	if path != "" {
		in.File, in.Name = path, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return in
}

// Towers reports whether the input is towers joined at the loss (a bundle, or a profile or
// a stored run of towers).
func (in *Input) Towers() (bool, error) {
	switch {
	case in.Run != nil:
		tw, err := in.Run.Towers()
		return tw != nil, err
	case in.Profile != nil:
		tw, err := in.Profile.Meta.Towers()
		return tw != nil, err
	}
	return in.MultiChain != nil, nil
}

// KeepsLogits reports whether the profile kept a language model's logits beside its loss
// (its keep_logits metadata, which a profile written before the key did), so that a plan's
// executor captures the model the same way; a chain says nothing (false).
func (in *Input) KeepsLogits() bool {
	var extra map[string]string
	switch {
	case in.Run != nil:
		extra = in.Run.Extra
	case in.Profile != nil:
		extra = in.Profile.Meta.Extra
	default:
		return false
	}
	v, ok := extra["keep_logits"]
	return !ok || v == "true"
}

// InputShape is the shape of the model input a profile or a run was taken with (nil for a
// chain, which does not hold one).
func (in *Input) InputShape() []int64 {
	switch {
	case in.Run != nil:
		return in.Run.InputShape
	case in.Profile != nil:
		return in.Profile.Meta.InputShape
	}
	return nil
}

// ChainOf returns the input's chain: a stored run's (RunChain), a profile's, the
// document's. Towers joined at the loss fail with an error wrapping chainplan.ErrUnsupported.
func (in *Input) ChainOf(ctx context.Context) (*chainplan.Chain, error) {
	switch {
	case in.Run != nil:
		return in.svc.RunChain(ctx, in.RunID)
	case in.Profile != nil:
		return in.Profile.Chain()
	case in.MultiChain != nil:
		return nil, fmt.Errorf("%w: the source is a bundle of %d towers joined at the loss, not one chain",
			chainplan.ErrUnsupported, in.MultiChain.K())
	}
	return in.Chain, nil
}

// MultiChainOf returns the input's bundle of towers joined at the loss; one chain fails
// with an error wrapping chainplan.ErrUnsupported.
func (in *Input) MultiChainOf(ctx context.Context) (*chainplan.MultiChain, error) {
	switch {
	case in.Run != nil:
		return in.svc.RunMultiChain(ctx, in.RunID)
	case in.Profile != nil:
		return in.Profile.MultiChain()
	case in.Chain != nil:
		return nil, fmt.Errorf("%w: the source is one chain, not towers joined at the loss", chainplan.ErrUnsupported)
	}
	return in.MultiChain, nil
}
