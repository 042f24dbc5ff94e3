package chainplan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
}

// ParseBytes reads a byte count: plain bytes ("123456") or a number with a unit ("512MiB",
// "2GB", "1.5 GiB"). Decimal units (kB, MB, GB, TB) are powers of 1000, binary units
// (KiB, MiB, GiB, TiB, and the shorthands K, M, G, T) powers of 1024. The result is
// rounded down to whole bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == '+' || r == '-') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("byte size %q: unknown unit %q (use B, kB, MB, GB, KiB, MiB, GiB, ...)", s, t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("byte size %q: not a number", s)
	}
	v *= mult
	if math.IsNaN(v) || math.IsInf(v, 0) || v >= math.MaxInt64 {
		return 0, fmt.Errorf("byte size %q: out of range", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("byte size %q: negative", s)
	}
	return int64(math.Floor(v)), nil
}

// FormatBytes writes a byte count with a binary unit, e.g. "1.50 GiB" or "512 B".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n)
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.2f %s", v, units[i])
}
