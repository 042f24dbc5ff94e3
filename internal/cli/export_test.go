package cli

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestExport(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "e.db")
	mustIngest(t, db, testdataFile("resnet_lz4.feather"), testdataFile("record_mlp.arrow"))
	want, err := chainplan.ReadChain(testdataFile("resnet.chain.json")) // medians computed by numpy
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runDB(t, db, "export", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got, err := chainplan.ParseChain([]byte(out))
	if err != nil {
		t.Fatalf("export output is not a chain: %v\n%s", err, out)
	}
	if len(got.Stages) != len(want.Stages) || got.InputBytes != want.InputBytes || got.Loss.BwdTmpBytes != want.Loss.BwdTmpBytes {
		t.Fatalf("chain %+v, want %+v", got, want)
	}
	for i := range want.Stages {
		g, w := got.Stages[i], want.Stages[i]
		if math.Abs(g.FwdTime-w.FwdTime) > 1e-12*w.FwdTime || math.Abs(g.BwdTime-w.BwdTime) > 1e-12*w.BwdTime {
			t.Fatalf("stage %d times %g, %g; want %g, %g", i+1, g.FwdTime, g.BwdTime, w.FwdTime, w.BwdTime)
		}
		g.FwdTime, g.BwdTime = w.FwdTime, w.BwdTime
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("stage %d = %+v, want %+v", i+1, g, w)
		}
	}
	path := filepath.Join(dir, "c.json")
	if code, _, errs := runDB(t, db, "export", "1", "-o", path); code != 0 {
		t.Fatalf("export -o: exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != out {
		t.Fatalf("export -o wrote %q (%v), want the same as standard output", b, err)
	}
	// The record-style run has no saved sizes: no chain, and the message says why.
	code, _, errs = runDB(t, db, "export", "latest")
	if code != exitBadInput || !strings.Contains(errs, `stage 1 ("embed"): field "saved_bytes": not measured`) {
		t.Fatalf("export of a record profile: exit %d, %q", code, errs)
	}
}
