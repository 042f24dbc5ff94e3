package plot

import (
	"bytes"
	"encoding/xml"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is what the structure tests read from an SVG: every path with its points and
// style, every text with its position, in the figure's points with y upwards (the
// coordinates gonum draws in).
type svgDoc struct {
	paths []svgPath
	texts []svgText
}

type svgPath struct {
	pts   [][2]float64
	style map[string]string
}

type svgText struct {
	x, y float64
	text string
}

// stroke and fill return the path's colours ("" when none).
func (p svgPath) stroke() string { return p.style["stroke"] }
func (p svgPath) fill() string {
	if f := p.style["fill"]; f != "none" {
		return f
	}
	return ""
}

// parseSVG parses doc as XML and collects its paths and texts; it fails the test when the
// document is not well-formed.
func parseSVG(t *testing.T, doc []byte) *svgDoc {
	t.Helper()
	d := &svgDoc{}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var inText *svgText
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch e.Name.Local {
			case "path":
				d.paths = append(d.paths, svgPath{pts: pathPoints(attr["d"]), style: parseStyle(attr["style"])})
			case "text":
				x, _ := strconv.ParseFloat(attr["x"], 64)
				y, _ := strconv.ParseFloat(attr["y"], 64)
				inText = &svgText{x: x, y: -y} // texts are drawn under scale(1, -1)
			}
		case xml.CharData:
			if inText != nil {
				inText.text += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" && inText != nil {
				d.texts = append(d.texts, *inText)
				inText = nil
			}
		}
	}
	return d
}

// pathPoints returns the end points of the M and L commands of a path.
func pathPoints(d string) [][2]float64 {
	var pts [][2]float64
	for _, f := range strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' || r == 'Z' }) {
		xy := strings.Split(f, ",")
		if len(xy) != 2 {
			continue // an arc: glyphs are counted as paths, not by their points
		}
		x, err1 := strconv.ParseFloat(xy[0], 64)
		y, err2 := strconv.ParseFloat(xy[1], 64)
		if err1 == nil && err2 == nil {
			pts = append(pts, [2]float64{x, y})
		}
	}
	return pts
}

func parseStyle(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(kv, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// strokes returns the paths stroked in colour c; fills those filled with it.
func (d *svgDoc) strokes(c string) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		if p.stroke() == c {
			out = append(out, p)
		}
	}
	return out
}

func (d *svgDoc) fills(c string) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		if p.fill() == c {
			out = append(out, p)
		}
	}
	return out
}

// hasText reports whether some text reads s.
func (d *svgDoc) hasText(s string) bool {
	return slices.ContainsFunc(d.texts, func(t svgText) bool { return t.text == s })
}

// axis maps a position on the page to a data value along one axis, fitted on the
// labelled tick marks: each major tick mark (a stroke 8 points long across the axis) is
// paired with the numeric label nearest to it along the axis.
type axis struct{ a, b float64 } // value = a·pos + b

func (ax axis) value(pos float64) float64 { return ax.a*pos + ax.b }

// yAxis fits the vertical axis whose tick marks end at the largest x left of xLimit.
func (d *svgDoc) yAxis(t *testing.T) axis {
	t.Helper()
	var ticks []float64
	for _, p := range d.paths {
		if len(p.pts) == 2 && p.pts[0][1] == p.pts[1][1] && math.Abs(math.Abs(p.pts[1][0]-p.pts[0][0])-8) < 1e-3 {
			ticks = append(ticks, p.pts[0][1])
		}
	}
	return fitAxis(t, ticks, d.texts, func(s svgText) float64 { return s.y })
}

// xAxis fits the horizontal axis.
func (d *svgDoc) xAxis(t *testing.T) axis {
	t.Helper()
	var ticks []float64
	for _, p := range d.paths {
		if len(p.pts) == 2 && p.pts[0][0] == p.pts[1][0] && math.Abs(math.Abs(p.pts[1][1]-p.pts[0][1])-8) < 1e-3 {
			ticks = append(ticks, p.pts[0][0])
		}
	}
	return fitAxis(t, ticks, d.texts, func(s svgText) float64 { return s.x })
}

func fitAxis(t *testing.T, ticks []float64, texts []svgText, along func(svgText) float64) axis {
	t.Helper()
	type pair struct{ pos, val float64 }
	var pairs []pair
	for _, tk := range ticks {
		best, bestD := math.NaN(), math.Inf(1)
		for _, s := range texts {
			v, err := strconv.ParseFloat(s.text, 64)
			if err != nil {
				continue
			}
			if dd := math.Abs(along(s) - tk); dd < bestD {
				best, bestD = v, dd
			}
		}
		if bestD < 8 { // a label sits beside its tick; farther off it belongs to another
			pairs = append(pairs, pair{tk, best})
		}
	}
	if len(pairs) < 2 {
		t.Fatalf("found %d labelled tick marks, need 2 to read the axis", len(pairs))
	}
	p0, p1 := pairs[0], pairs[len(pairs)-1]
	ax := axis{a: (p1.val - p0.val) / (p1.pos - p0.pos)}
	ax.b = p0.val - ax.a*p0.pos
	for _, p := range pairs {
		// Positions are written with 5 significant digits: a few hundredths of a point.
		if math.Abs(ax.value(p.pos)-p.val) > 0.05*math.Abs(ax.a) {
			t.Fatalf("tick labels are not linear in their positions: %+v", pairs)
		}
	}
	return ax
}
