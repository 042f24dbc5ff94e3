package chainplan

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Sizes and bandwidths, one rule for the CLI and Python (docs/CLI.md, "Sizes"):
//
//   - a size is a decimal number, with an optional fraction and exponent ("512", "1.5",
//     "1e9", "1.5e3"), then optional spaces, then an optional unit;
//   - units are case-insensitive and "B" is optional: k, M, G, T, P (with or without B)
//     are powers of 1000, Ki, Mi, Gi, Ti, Pi (with or without B) powers of 1024;
//   - a byte count must come out whole: "1.5kB" is 1500 bytes, "1.5" is refused;
//   - a bandwidth is a size per second: the same syntax with an optional "/s", and it may
//     be fractional ("0.5", "12GB/s").
//
// A bare prefix letter is SI because "B" is optional: "2G" must mean what "2GB" means, and
// only the "i" of the IEC prefixes (Gi, GiB) asks for powers of 1024. Earlier versions read
// "2g" as 2 GiB but "2gb" as 2·10⁹ bytes, one letter apart.

// sizeUnits maps a lower-case unit, "b" removed, to its factor.
var sizeUnits = map[string]int64{
	"":  1,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
	"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40, "pi": 1 << 50,
}

// sizeSyntax splits a size into its sign, mantissa, exponent and unit. It admits only
// plain decimal numbers: no "NaN", "Inf", hexadecimal or digit separators.
var sizeSyntax = regexp.MustCompile(`^([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\s*([A-Za-z]*)$`)

// maxExponent bounds the decimal exponent: 10^40 bytes is far beyond any budget, and the
// bound keeps "1e999999999" from building a billion-digit number.
const maxExponent = 40

const sizeUnitList = "B, kB, MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024)"

// parseSize reads the size t as an exact, non-negative rational number of bytes; name
// introduces the value in errors (`byte size "2XB"`).
func parseSize(t, name string) (*big.Rat, error) {
	t = strings.TrimSpace(t)
	if t == "" {
		return nil, fmt.Errorf("%s: empty (want a number of bytes, e.g. 512MiB, 2GB or 1e9)", name)
	}
	m := sizeSyntax.FindStringSubmatch(t)
	if m == nil {
		return nil, fmt.Errorf("%s: not a number with an optional unit (e.g. 512MiB, 2GB, 1e9)", name)
	}
	sign, mantissa, exp, unit := m[1], m[2], m[3], m[4]
	factor, ok := sizeUnits[strings.TrimSuffix(strings.ToLower(unit), "b")]
	if !ok {
		return nil, fmt.Errorf("%s: unknown unit %q (use %s)", name, unit, sizeUnitList)
	}
	v, ok := new(big.Rat).SetString(mantissa)
	if !ok { // unreachable: the pattern admits only decimal mantissas
		return nil, fmt.Errorf("%s: not a number", name)
	}
	if exp != "" {
		e, err := strconv.Atoi(exp)
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, fmt.Errorf("%s: out of range (exponent beyond ±%d)", name, maxExponent)
		}
		p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(e))), nil))
		if e < 0 {
			p.Inv(p)
		}
		v.Mul(v, p)
	}
	if sign == "-" && v.Sign() != 0 {
		return nil, fmt.Errorf("%s: negative", name)
	}
	return v.Mul(v, new(big.Rat).SetInt64(factor)), nil
}

func abs(e int) int {
	if e < 0 {
		return -e
	}
	return e
}

// ParseBytes reads a byte count: plain bytes ("123456", "1e9") or a number with a unit
// ("512MiB", "2GB", "1.5 GiB", "1.5e3MB"). k, M, G, T, P are powers of 1000 and Ki, Mi,
// Gi, Ti, Pi powers of 1024, case-insensitive, "B" optional. The count must be whole, not
// negative, and fit an int64; the error names the problem.
func ParseBytes(s string) (int64, error) {
	v, err := parseSize(s, fmt.Sprintf("byte size %q", s))
	if err != nil {
		return 0, err
	}
	if !v.IsInt() {
		return 0, fmt.Errorf("byte size %q: not a whole number of bytes (%s)", s, v.FloatString(3))
	}
	if !v.Num().IsInt64() {
		return 0, fmt.Errorf("byte size %q: out of range (at most %d bytes, about 9.2 EB)", s, int64(math.MaxInt64))
	}
	return v.Num().Int64(), nil
}

// ParseBandwidth reads a bandwidth in bytes per second: a size as ParseBytes reads it,
// optionally followed by "/s" ("12GB/s", "1.5 GiB/s", "1.2e10"). It may be fractional
// (a chain's times may use any unit, so "0.5" byte per time unit is valid) and must be
// positive and finite.
func ParseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if lower := strings.ToLower(t); strings.HasSuffix(lower, "/s") {
		t = t[:len(t)-2]
	}
	v, err := parseSize(t, fmt.Sprintf("bandwidth %q", s))
	if err != nil {
		return 0, err
	}
	// Float64 rounds to the nearest float: +Inf beyond MaxFloat64, 0 below the smallest.
	f, _ := v.Float64()
	if math.IsInf(f, 0) || f == 0 {
		return 0, fmt.Errorf("bandwidth %q: must be a positive, finite number of bytes per second", s)
	}
	return f, nil
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

// bytesAndUnit writes "512 B", or "3221225472 B (3.00 GiB)" for larger counts.
func bytesAndUnit(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d B (%s)", n, FormatBytes(n))
}
