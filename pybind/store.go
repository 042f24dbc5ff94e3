package pybind

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/arrowtable"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/profilearrow"
	"github.com/chainplan/chainplan/store"
)

// Version is recorded with every plan stored from Python (plans.chainplan_version).
var Version = chainplan.Version

// fileError makes a missing or invalid profile file a coded input error.
func fileError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission), errors.Is(err, chainplan.ErrInputFile):
		return fmt.Errorf("%w: %v", errBadRequest, err)
	case errors.Is(err, profilearrow.ErrInvalidProfile), errors.Is(err, chainplan.ErrSchemaVersion):
		return fmt.Errorf("%w: %v", errInvalidProfile, err)
	}
	return err
}

var errInvalidProfile = errors.New("invalid profile")

// Ingest stores the profile file at filePath in the database (created if needed)
// and returns {"run_id": N, "existing": bool, "rows": N} as JSON. Ingesting the same file
// twice stores it once.
func Ingest(database, filePath string) (result string, err error) {
	defer recoverError(&err)
	err = withDatabase(database, true, func(ctx context.Context, s *service.Service) error {
		res, _, err := s.Ingest(ctx, filePath)
		if err != nil {
			return fileError(err)
		}
		b, err := json.Marshal(map[string]any{"run_id": res.RunID, "existing": res.Existing, "rows": res.Rows})
		result = string(b)
		return err
	})
	return result, err
}

// Query runs one read-only SQL statement with the parameters paramsJSON holds (a JSON
// array: numbers, strings, booleans as 1 and 0, null; "" for none), each binding one
// placeholder ($1, $2, ...; ? on SQLite), and returns the result as a base64-encoded Arrow
// IPC file (gopy passes strings through C, where binary data would stop at the first zero
// byte). A statement that would write is refused and changes nothing; several statements,
// and parameters that do not match the placeholders one for one, are a bad query.
func Query(database, query, paramsJSON string) (arrowBase64 string, err error) {
	defer recoverError(&err)
	params, err := queryParams(paramsJSON)
	if err != nil {
		return "", codedError(err)
	}
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		rows, err := s.Store().Query(ctx, query, params...)
		if err != nil {
			return err // store.ErrBadQuery or ErrReadOnly: coded "bad-query"
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

// queryParams decodes Query's parameters: integers as int64 (exactly, whatever their
// size), other numbers as float64, booleans as 1 and 0 (the store keeps them so), strings
// and null as such.
func queryParams(paramsJSON string) ([]any, error) {
	if paramsJSON == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(paramsJSON))
	dec.UseNumber()
	var raw []any
	if err := dec.Decode(&raw); err != nil {
		return nil, badRequest(fmt.Errorf("query parameters: want a JSON array of values: %v", err))
	}
	params := make([]any, len(raw))
	for i, v := range raw {
		switch v := v.(type) {
		case nil, string:
			params[i] = v
		case bool:
			params[i] = int64(0)
			if v {
				params[i] = int64(1)
			}
		case json.Number:
			if n, err := v.Int64(); err == nil {
				params[i] = n
			} else if f, err := v.Float64(); err == nil {
				params[i] = f
			} else {
				return nil, badRequest(fmt.Errorf("query parameter %d: %s is out of range", i+1, v))
			}
		default: // an array or an object
			return nil, badRequest(fmt.Errorf("query parameter %d: %s is no value SQL binds (want a number, a string, a boolean or null)",
				i+1, strings.TrimSpace(fmt.Sprint(v))))
		}
	}
	return params, nil
}

// RecordBandwidth stores a bandwidth (bytes per second) measured for run runID over link
// ("host": device-host copies, "intra": between devices of a node, "inter": between nodes;
// "" is "host") and returns it.
func RecordBandwidth(database string, runID int64, link string, bytesPerS float64, device, method string) (stored float64, err error) {
	defer recoverError(&err)
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		err := s.Store().RecordBandwidth(ctx, &store.Bandwidth{RunID: runID, BytesPerS: bytesPerS, Device: device, Method: method,
			Link: link})
		if err != nil && !errors.Is(err, chainplan.ErrNotFound) {
			return fmt.Errorf("%w: %v", errBadRequest, err)
		}
		return err
	})
	return bytesPerS, err
}

// LatestBandwidth returns the newest host-device bandwidth recorded for run runID, or 0
// when none is.
func LatestBandwidth(database string, runID int64) (bytesPerS float64, err error) {
	defer recoverError(&err)
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		bytesPerS, _, err = s.Store().LatestBandwidth(ctx, runID)
		return err
	})
	return bytesPerS, err
}
