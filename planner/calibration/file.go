package calibration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ReadFile reads a calibration document (chainplan advice calibrate's output) and checks
// it: its format tag, known fields only, positive scales.
func ReadFile(path string) (*Calibration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q (chainplan advice calibrate writes it)", path, c.Format, Format)
	}
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}
