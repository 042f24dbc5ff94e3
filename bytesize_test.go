package chainplan_test

import (
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"123456", 123456},
		{"0", 0},
		{"7B", 7},
		{"7 b", 7},
		{"+7", 7},
		// SI prefixes are powers of 1000, with or without B, in any case.
		{"10 kB", 10_000},
		{"4k", 4000},
		{"4K", 4000},
		{"2GB", 2_000_000_000},
		{"2g", 2_000_000_000},
		{"2gb", 2_000_000_000},
		{"3 T", 3e12},
		{"1PB", 1e15},
		// IEC prefixes are powers of 1024, with or without B, in any case.
		{"512MiB", 512 << 20},
		{"512mi", 512 << 20},
		{"1.5 GiB", 3 << 29},
		{"2KIB", 2048},
		{"1TiB", 1 << 40},
		// Scientific notation, with a unit too; fractions that come out whole.
		{"1e9", 1_000_000_000},
		{"1E9", 1_000_000_000},
		{"2.5e3", 2500},
		{"1.5e3MB", 1_500_000_000},
		{"1.5e-3 GB", 1_500_000},
		{"0.1GB", 100_000_000},
		{".5kB", 500},
		{"5.", 5},
		{"  64 MiB  ", 64 << 20},
		{"-0", 0},
		{"9223372036854775807", math.MaxInt64},
	}
	for _, tt := range tests {
		got, err := chainplan.ParseBytes(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseBytesRejects(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"", "empty"},
		{"   ", "empty"},
		{"-1", "negative"},
		{"-5MiB", "negative"},
		{"NaN", "not a number"},
		{"nan", "not a number"},
		{"Inf", "not a number"},
		{"-Inf", "not a number"},
		{"0x10", "not a number"}, // no hexadecimal
		{"1_000", "not a number"},
		{"1e400", "out of range"},
		{"1e999999999", "out of range"},
		{"1e30GiB", "out of range"},
		{"9223372036854775808", "out of range"},
		{"10EB", "unknown unit"},
		{"2XB", `unknown unit "XB"`},
		{"12 parsecs", `unknown unit "parsecs"`},
		{"GiB", "not a number"},
		{"1.5", "not a whole number of bytes (1.500)"},
		{"1e-3", "not a whole number"},
		{"0.3B", "not a whole number"},
		{"1/2", "not a number"},
		{"2 GiB/s", "not a number"}, // a bandwidth is not a size
		{"1..5", "not a number"},
		{"1e", `unknown unit "e"`},
	}
	for _, tt := range tests {
		got, err := chainplan.ParseBytes(tt.in)
		if err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error containing %q", tt.in, got, tt.msg)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), `"`+tt.in+`"`) {
			t.Errorf("ParseBytes(%q) error %q, want it to quote the input and say %q", tt.in, err, tt.msg)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"12GB/s", 12e9},
		{"12 GB/s", 12e9},
		{"12gb/S", 12e9},
		{"12GB", 12e9},
		{"12g/s", 12e9},
		{"1.5GiB/s", 1.5 * (1 << 30)},
		{"1.2e10", 1.2e10},
		{"1.2e10/s", 1.2e10},
		{"1B/s", 1},
		{"0.5", 0.5}, // a rate may be fractional
		{"1e-30", 1e-30},
	}
	for _, tt := range tests {
		got, err := chainplan.ParseBandwidth(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseBandwidth(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, msg string }{
		{"", "empty"},
		{"/s", "empty"},
		{"0", "positive"},
		{"0GB/s", "positive"},
		{"-1", "negative"},
		{"NaN", "not a number"},
		{"quick", "not a number"},
		{"1e400", "out of range"},
		{"12XB/s", `unknown unit "XB"`},
		{"12GB/h", "not a number"},
	}
	for _, tt := range bad {
		got, err := chainplan.ParseBandwidth(tt.in)
		if err == nil {
			t.Errorf("ParseBandwidth(%q) = %v, want an error containing %q", tt.in, got, tt.msg)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), `bandwidth "`+tt.in+`"`) {
			t.Errorf("ParseBandwidth(%q) error %q, want it to name the input and say %q", tt.in, err, tt.msg)
		}
	}
}

// FuzzParseBytes checks that ParseBytes never panics, and that what it accepts is a
// non-negative count that reads back the same in plain bytes and through ParseBandwidth.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"512MiB", "2GB", "1e9", "1.5e3MB", "", "-1", "NaN", "1e400", "2XB", "1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := chainplan.ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d, negative", s, n)
		}
		if bw, err := chainplan.ParseBandwidth(s); n > 0 && (err != nil || math.Abs(bw-float64(n)) > 1e-9*float64(n)) {
			t.Fatalf("ParseBandwidth(%q) = %v, %v; ParseBytes gave %d", s, bw, err, n)
		}
	})
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{512: "512 B", 1536: "1.50 KiB", 3 << 30: "3.00 GiB"} {
		if got := chainplan.FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}
