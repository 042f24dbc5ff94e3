package pybind

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/arrowtable"
	"github.com/chainplan/chainplan/internal/history"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profiler"
	"github.com/chainplan/chainplan/store"
)

// Version is recorded with every plan stored from Python.
var Version = "python"

// withDB opens the database at path, runs fn and closes it, returning fn's error coded.
// A database that does not exist is created only when create is set.
func withDB(path string, create bool, fn func(ctx context.Context, db *store.DB) error) error {
	ctx := context.Background()
	db, err := open(ctx, path, create)
	if err != nil {
		return codedError(err)
	}
	defer db.Close()
	return codedError(fn(ctx, db))
}

// open opens the database at path ("" means $CHAINPLAN_DB or ~/.chainplan/chainplan.db).
func open(ctx context.Context, path string, create bool) (*store.DB, error) {
	if path == "" {
		p, err := history.DefaultDBPath()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errBadRequest, err)
		}
		path = p
	}
	return store.Open(ctx, path, store.Options{MustExist: !create})
}

// fileError makes a missing or invalid profile file a coded input error.
func fileError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: %v", errBadRequest, err)
	case errors.Is(err, profiler.ErrInvalidProfile), errors.Is(err, chainplan.ErrSchemaVersion):
		return fmt.Errorf("%w: %v", errInvalidProfile, err)
	}
	return err
}

var errInvalidProfile = errors.New("invalid profile")

// Ingest stores the profile file at filePath in the database dbPath (created if needed)
// and returns {"run_id": N, "existing": bool, "rows": N} as JSON. Ingesting the same file
// twice stores it once.
func Ingest(dbPath, filePath string) (result string, err error) {
	defer recoverError(&err)
	err = withDB(dbPath, true, func(ctx context.Context, db *store.DB) error {
		res, _, err := history.IngestFile(ctx, db, filePath)
		if err != nil {
			return fileError(err)
		}
		b, _ := json.Marshal(map[string]any{"run_id": res.RunID, "existing": res.Existing, "rows": res.Rows})
		result = string(b)
		return nil
	})
	return result, err
}

// Query runs a read-only SQL query and returns the result as a base64-encoded Arrow IPC
// file (gopy passes strings through C, where binary data would stop at the first zero
// byte). A statement that would write is refused and changes nothing.
func Query(dbPath, query string) (arrowBase64 string, err error) {
	defer recoverError(&err)
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		rows, err := db.Query(ctx, query)
		if err != nil {
			return err // store.ErrBadQuery or ErrReadOnly: coded "bad-query" by withDB
		}
		defer rows.Close()
		t := arrowtable.Table{Columns: rows.Columns()}
		for rows.Next() {
			t.Append(rows.Values())
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := arrowtable.Write(&buf, &t); err != nil {
			return err
		}
		arrowBase64 = base64.StdEncoding.EncodeToString(buf.Bytes())
		return nil
	})
	return arrowBase64, err
}

// SolveRun plans the chain of stored run runID as requestJSON asks (see Solve), records
// the plan and returns {"plan_id": N, "plan": {...}} as JSON.
func SolveRun(dbPath string, runID int64, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	req, minBudget, err := parseRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		c, err := history.RunChain(ctx, db, runID)
		if err != nil {
			return err
		}
		p, err := solve(c, req, minBudget)
		if err != nil {
			return err
		}
		params := map[string]any{"algo": req.Algo, "budget_bytes": p.BudgetBytes, "slots": p.Slots,
			"segments": req.Segments, "min_budget": minBudget, "source": "python"}
		id, err := db.RecordPlan(ctx, runID, p, params, Version)
		if err != nil {
			return err
		}
		b, err := json.Marshal(map[string]any{"plan_id": id, "plan": p})
		result = string(b)
		return err
	})
	return result, err
}

// SolveFile plans the chain aggregated from a profile file (not stored) and returns the
// plan as JSON.
func SolveFile(filePath, requestJSON string) (plan string, err error) {
	defer recoverError(&err)
	req, minBudget, err := parseRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	data, err := os.ReadFile(filePath)
	if err != nil {
		return "", codedError(fileError(err))
	}
	prof, err := profiler.Read(data)
	if err != nil {
		return "", codedError(fileError(err))
	}
	c, err := prof.Chain()
	if err != nil {
		return "", codedError(err)
	}
	p, err := solve(c, req, minBudget)
	if err != nil {
		return "", codedError(err)
	}
	b, err := json.Marshal(p)
	return string(b), codedError(err)
}

// ExportChain returns the chain of stored run runID as chainplan.chain/v1 JSON.
func ExportChain(dbPath string, runID int64) (chain string, err error) {
	defer recoverError(&err)
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		c, err := history.RunChain(ctx, db, runID)
		if err != nil {
			return err
		}
		b, err := c.MarshalIndent()
		chain = string(b)
		return err
	})
	return chain, err
}

// execution is the JSON form of a measured execution from Python.
type execution struct {
	StepTimeS    float64           `json:"step_time_s"`
	PeakBytes    int64             `json:"peak_bytes"`
	Steps        int64             `json:"steps"`
	Device       string            `json:"device"`
	TorchVersion string            `json:"torch_version"`
	Metadata     map[string]string `json:"metadata"`
}

// RecordExecution stores a measured execution of plan planID ({"step_time_s": s,
// "peak_bytes": N, "steps": N, "device": "...", "torch_version": "..."}) and returns its id.
func RecordExecution(dbPath string, planID int64, executionJSON string) (id int64, err error) {
	defer recoverError(&err)
	var e execution
	if err := json.Unmarshal([]byte(executionJSON), &e); err != nil {
		return 0, codedError(fmt.Errorf("%w: execution: %v", errBadRequest, err))
	}
	host, _ := os.Hostname()
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		id, err = db.RecordExecution(ctx, &store.Execution{PlanID: planID, CreatedAt: time.Now(),
			Steps: max(e.Steps, 1), StepTimeS: e.StepTimeS, PeakBytes: e.PeakBytes, TorchVersion: e.TorchVersion,
			Device: e.Device, Host: host, Metadata: e.Metadata})
		return err
	})
	return id, err
}

// solve runs the planner, first finding the smallest budget when asked to.
func solve(c *chainplan.Chain, req planner.Request, minBudget bool) (*chainplan.Plan, error) {
	if minBudget {
		b, err := planner.MinBudget(c, req)
		if err != nil {
			return nil, err
		}
		req.BudgetBytes = b
	}
	return planner.Solve(c, req)
}

// runSummary is one run in the JSON list Runs returns.
type runSummary struct {
	RunID        int64   `json:"run_id"`
	ModelName    string  `json:"model_name"`
	CreatedAt    string  `json:"created_at"`
	Device       string  `json:"device"`
	TorchVersion string  `json:"torch_version"`
	NumStages    int     `json:"num_stages"`
	BatchSize    int64   `json:"batch_size"`
	FwdTimeS     float64 `json:"fwd_time_s"`
	BwdTimeS     float64 `json:"bwd_time_s"`
	SourcePath   string  `json:"source_path"`
}

// Runs lists the stored runs, newest first (at most limit when positive, of one model when
// modelName is not empty), as a JSON array.
func Runs(dbPath, modelName string, limit int64) (list string, err error) {
	defer recoverError(&err)
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		runs, err := db.Runs(ctx, store.RunFilter{ModelName: modelName, Limit: int(limit)})
		if err != nil {
			return err
		}
		out := make([]runSummary, len(runs))
		for i, r := range runs {
			out[i] = runSummary{RunID: r.ID, ModelName: r.ModelName, CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339),
				Device: r.Device, TorchVersion: r.TorchVersion, NumStages: r.NumStages, BatchSize: r.BatchSize,
				FwdTimeS: r.TotalFwdTimeS, BwdTimeS: r.TotalBwdTimeS, SourcePath: r.SourcePath}
		}
		b, err := json.Marshal(out)
		list = string(b)
		return err
	})
	return list, err
}

// RecordBandwidth stores a host-device copy bandwidth (bytes per second) measured for run
// runID and returns it.
func RecordBandwidth(dbPath string, runID int64, bytesPerS float64, device, method string) (stored float64, err error) {
	defer recoverError(&err)
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		err := db.RecordBandwidth(ctx, &store.Bandwidth{RunID: runID, BytesPerS: bytesPerS, Device: device, Method: method})
		if err != nil && !errors.Is(err, chainplan.ErrNotFound) {
			return fmt.Errorf("%w: %v", errBadRequest, err)
		}
		return err
	})
	return bytesPerS, err
}

// LatestBandwidth returns the newest bandwidth recorded for run runID, or 0 when none is.
func LatestBandwidth(dbPath string, runID int64) (bytesPerS float64, err error) {
	defer recoverError(&err)
	err = withDB(dbPath, false, func(ctx context.Context, db *store.DB) error {
		bytesPerS, _, err = db.LatestBandwidth(ctx, runID)
		return err
	})
	return bytesPerS, err
}
