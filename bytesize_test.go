package chainplan_test

import (
	"testing"

	"github.com/chainplan/chainplan"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"123456", 123456, false},
		{"512MiB", 512 << 20, false},
		{"2GB", 2_000_000_000, false},
		{"1.5 GiB", 3 << 29, false},
		{"4k", 4096, false},
		{"10 kB", 10_000, false},
		{"7B", 7, false},
		{"", 0, true},
		{"GiB", 0, true},
		{"12 parsecs", 0, true},
		{"-5MiB", 0, true},
		{"1e30GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := chainplan.ParseBytes(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{512: "512 B", 1536: "1.50 KiB", 3 << 30: "3.00 GiB"} {
		if got := chainplan.FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}
