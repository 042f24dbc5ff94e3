package plot

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Recomputation is drawn hatched: a box in its stage's colour crossed by light diagonal
// stripes, so that it stays readable as its stage's work (the hue) and as a
// recomputation (the stripes) in colour and in grey.

// colorHatch is the colour of the stripes; hatchGap their spacing, hatchWidth their width.
var colorHatch = color.RGBA{0xf5, 0xf5, 0xf5, 0xff}

const (
	hatchGap   = vg.Length(4)
	hatchWidth = vg.Length(1)
)

// recomputeLegend is the legend entry of the hatched boxes.
const recomputeLegend = "recomputes (hatched)"

// hatch strokes diagonal stripes over rectangle r, clipped to it: the lines
// x = r.Min.X + d + (y − r.Min.Y) for d from −height to width, every hatchGap.
func hatch(c draw.Canvas, r vg.Rectangle) {
	sty := draw.LineStyle{Color: colorHatch, Width: hatchWidth}
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	for d := -h + hatchGap/2; d < w; d += hatchGap {
		lo, hi := max(0, -d), min(h, w-d) // heights above r.Min.Y where the line is inside
		if lo >= hi {
			continue
		}
		c.StrokeLine2(sty, r.Min.X+d+lo, r.Min.Y+lo, r.Min.X+d+hi, r.Min.Y+hi)
	}
}

// hatchSwatch is the legend's icon of a recomputation: a dark box, hatched.
type hatchSwatch struct{}

// Thumbnail fills the legend's icon and stripes it.
func (hatchSwatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	pad := (r.Max.Y - r.Min.Y) / 6
	r.Min.Y += pad
	r.Max.Y -= pad
	c.SetColor(colorText)
	c.Fill(r.Path())
	hatch(*c, r)
}
