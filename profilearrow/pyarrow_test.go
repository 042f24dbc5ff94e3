package profilearrow_test

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// python is the project's virtual environment, where pyarrow is installed.
const python = "../.venv/bin/python"

// TestPyarrowReadsGoFiles checks the other direction of the contract: files profilearrow.Write
// writes, in every encoding, read back in pyarrow with the same schema, metadata and values.
func TestPyarrowReadsGoFiles(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skip("no .venv/bin/python (make venv): pyarrow check skipped")
	}
	p := sampleProfile(4, 3, 5)
	p.Rows[2].SavedBytes = profile.NullInt64{}
	dir := t.TempDir()
	var paths []string
	for i, opts := range []profilearrow.WriteOptions{{}, {Compression: profilearrow.CompressionLZ4},
		{Compression: profilearrow.CompressionZSTD}, {Stream: true, BatchRows: 4}} {
		path := filepath.Join(dir, string(rune('a'+i))+".arrow")
		if err := os.WriteFile(path, mustEncode(t, p, opts), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	script := `
import sys, json, pyarrow as pa, pyarrow.ipc as ipc
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        head = f.read(6)
    t = (ipc.open_file(path) if head == b"ARROW1" else ipc.open_stream(path)).read_all()
    md = {k.decode(): v.decode() for k, v in t.schema.metadata.items()}
    assert md["format"] == "chainplan.profile/v1", md
    assert md["model_name"] == "sample" and md["note"] == "go", md
    assert json.loads(md["input_shape"]) == [32, 3, 224, 224], md
    assert t.num_rows == 15, t.num_rows
    assert str(t.schema.field("fwd_time_s").type) == "double"
    assert str(t.schema.field("saved_bytes").type) == "int64"
    assert t.column("saved_bytes").to_pylist()[2] is None
    assert t.column("stage_kind").to_pylist()[-1] == "loss"
    print(sum(t.column("fwd_time_s").to_pylist()))
`
	out, err := exec.Command(python, append([]string{"-c", script}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	var sum float64
	for _, r := range p.Rows {
		sum += r.FwdTimeS
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(paths) {
		t.Fatalf("pyarrow printed %q, want one sum per file", out)
	}
	for _, line := range lines {
		got, err := strconv.ParseFloat(line, 64)
		if err != nil || math.Abs(got-sum) > 1e-12*sum {
			t.Fatalf("pyarrow's sum of fwd_time_s %s, want %g", line, sum)
		}
	}
}
