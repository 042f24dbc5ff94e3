package profilearrow_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profilearrow"
)

// FuzzReadProfile feeds the reader arbitrary bytes, seeded with every file of
// testdata/profiles (pyarrow-written, good and bad) and Go-written files in each encoding.
// Properties: Read never panics or exhausts memory; it fails with ErrInvalidProfile or
// ErrSchemaVersion, or returns a profile that survives a Write/Read round trip unchanged
// and aggregates without panicking.
//
//	go test -run='^$' -fuzz=FuzzReadProfile -fuzztime=10s ./profiler
func FuzzReadProfile(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(testdata, "*.arrow*"))
	if err != nil {
		f.Fatal(err)
	}
	feathers, _ := filepath.Glob(filepath.Join(testdata, "*.feather"))
	for _, path := range append(files, feathers...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	p := sampleProfile(3, 2, 9)
	for _, opts := range []profilearrow.WriteOptions{{}, {Stream: true}, {Compression: profilearrow.CompressionLZ4},
		{Compression: profilearrow.CompressionZSTD, Stream: true, BatchRows: 2}} {
		f.Add(mustEncode(f, p, opts))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profilearrow.Read(data)
		if err != nil {
			if !errors.Is(err, profilearrow.ErrInvalidProfile) && !errors.Is(err, chainplan.ErrSchemaVersion) {
				t.Fatalf("Read error %v is neither ErrInvalidProfile nor ErrSchemaVersion", err)
			}
			return
		}
		again, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{}))
		if err != nil {
			t.Fatalf("a profile Read accepted does not read back after Write: %v", err)
		}
		if !reflect.DeepEqual(again.Rows, p.Rows) {
			t.Fatalf("rows change in a Write/Read round trip")
		}
		if _, err := p.Chain(); err != nil && !errors.Is(err, chainplan.ErrInvalidChain) {
			t.Fatalf("Chain error %v is not ErrInvalidChain", err)
		}
	})
}
