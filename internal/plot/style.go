package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The shared style: one palette (Tableau 10, the colours most plotting libraries start
// from, readable by most colour-blind readers), one colour per algorithm, per operation
// kind and per pipeline stage, the same fonts and line widths in every picture.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0x7f, 0x7f, 0x7f, 0xff}, // grey
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

// Colours with a fixed meaning.
var (
	colorText    = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colorBudget  = color.RGBA{0xd6, 0x27, 0x28, 0xff}  // the budget or memory limit line
	colorPeak    = color.RGBA{0x00, 0x00, 0x00, 0xff}  // the simulated peak marker
	colorMeasure = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}  // what an execution measured
	colorChosen  = color.RGBA{0x00, 0x00, 0x00, 0xff}  // the chosen plan on a frontier
	colorMemory  = color.RGBA{0x1f, 0x77, 0xb4, 0xff}  // the memory curve
	colorBars    = color.RGBA{0x5b, 0x5b, 0x5b, 0xff}  // memory per pipeline device
	colorRanBar  = color.RGBA{0x00, 0x5f, 0x5f, 0xff}  // memory a pipeline device measured
	colorFill    = color.NRGBA{0x1f, 0x77, 0xb4, 0x40} // under the memory curve
	colorGrid    = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	bgColor      = color.White
)

// algoColors gives each algorithm its colour in every picture; others take colorOther.
var algoColors = map[string]color.RGBA{
	"rotor":       palette[0],
	"revolve":     palette[4],
	"sequential":  palette[7],
	"store-all":   {0x00, 0x00, 0x00, 0xff},
	"pofo":        palette[3],
	"offload":     palette[1],
	"optimal":     palette[9],
	"autocapper":  palette[2],
	"opportunist": palette[6],
	"greedy":      palette[8],
	"rotor-ops":   {0x08, 0x30, 0x6b, 0xff},
	// The systems of bench/promise (PyTorch's checkpointing, torch.compile, chainplan).
	// "per-block" is also the multichain pictures' per-block sequence: one colour for both.
	"plain":                 {0x00, 0x00, 0x00, 0xff},
	"checkpoint_sequential": palette[7],
	"per-block":             palette[1],
	"per-block SAC":         palette[4],
	"chainplan":             palette[0],
	"torch.compile":         palette[3],
	"chainplan + compile":   palette[2],
	// The multichain pictures never show the offloading planners: their colours repeat.
	"multichain":        palette[3],
	"multichain-linear": palette[0],
	// The pipeline planners never share a picture with the others: their colours repeat.
	"madpipe":    palette[0],
	"contiguous": palette[2],
	"pipedream":  palette[1],
	// The simulated schedules (planner/pipesim) have pictures of their own too.
	"gpipe":           palette[0],
	"1f1b-flush":      palette[1],
	"pipedream-async": palette[2],
	"2bw":             palette[3],
	"timeprest":       palette[4],
	"periodic":        palette[6],
}

var colorOther = palette[5]

func algoColor(name string) color.RGBA {
	if c, ok := algoColors[name]; ok {
		return c
	}
	return colorOther
}

// opColors colours the operations of a timeline: forwards that record the graph, those
// that do not, backwards, and the two transfer directions.
var opColors = map[string]color.RGBA{
	"F_all":    palette[0],
	"F_ck":     {0x9e, 0xc9, 0xe8, 0xff},
	"F_none":   {0xc6, 0xdb, 0xef, 0xff},
	"B":        palette[1],
	"offload":  palette[2],
	"prefetch": palette[4],
}

// stageColor is the colour of pipeline stage k (0-based); the palette cycles.
func stageColor(k int) color.RGBA { return palette[k%len(palette)] }

// Sizes shared by the pictures.
const (
	fontSize  = vg.Length(10)
	titleSize = vg.Length(12)
	lineWidth = vg.Length(1.5)
	// width and height of a one-panel picture.
	figWidth  = 7 * vg.Inch
	figHeight = 4.2 * vg.Inch
)

// sans is the typeface of every picture: gonum's default is a serif.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func init() {
	// The plots take their fonts from this variable when they are made; nothing else in
	// the process draws with gonum.
	gplot.DefaultFont = sans
}

// newPlot returns a plot with the shared fonts, a light grid and the legend at the top right.
func newPlot(title, xLabel, yLabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = titleSize
	p.Title.TextStyle.Color = colorText
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = fontSize
		a.Tick.Label.Font.Size = fontSize - 1
		a.Label.TextStyle.Color = colorText
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = fontSize - 1
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colorGrid, colorGrid
	p.Add(g)
	return p
}

// lineStyle returns a solid line of the shared width in colour c.
func lineStyle(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: lineWidth}
}

// dashed returns a dashed line in colour c.
func dashed(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: lineWidth, Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

// scale is a unit in which an axis is labelled: values are divided by Div and the axis
// label names Name, so that tick labels stay plain numbers ("512", not "5.12e+08").
type scale struct {
	Div  float64
	Name string
}

// bytesScale returns the binary unit in which sizes up to max read best.
func bytesScale(max float64) scale {
	switch {
	case max >= 1<<30:
		return scale{1 << 30, "GiB"}
	case max >= 1<<20:
		return scale{1 << 20, "MiB"}
	case max >= 1<<10:
		return scale{1 << 10, "KiB"}
	}
	return scale{1, "B"}
}

// timeScale returns the unit in which times in seconds up to max read best. Chains that
// the profiler wrote are in seconds (DESIGN.md); a hand-written chain's unit is its own,
// and its pictures say seconds all the same.
func timeScale(max float64) scale {
	switch {
	case max == 0 || math.IsNaN(max) || max >= 1:
		return scale{1, "s"}
	case max >= 1e-3:
		return scale{1e-3, "ms"}
	}
	return scale{1e-6, "µs"}
}
