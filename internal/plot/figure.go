package plot

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/chainplan/chainplan"
)

// Format is an output format of a Figure.
type Format string

// The formats a Figure is written in.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// pngDPI is the resolution of PNG output: sharp on a high-density screen, small enough to
// commit.
const pngDPI = 144

// FormatOf returns the format a file name asks for by its extension, .svg or .png (any
// case). Another extension is an error wrapping chainplan.ErrUnsupported that names it.
func FormatOf(path string) (Format, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg":
		return SVG, nil
	case ".png":
		return PNG, nil
	default:
		if ext == "" {
			return "", fmt.Errorf("%w: output file %q has no extension (want .svg or .png)", chainplan.ErrUnsupported, path)
		}
		return "", fmt.Errorf("%w: output file %q: unknown extension %q (want .svg or .png)", chainplan.ErrUnsupported, path, ext)
	}
}

// Figure is a picture ready to be written: its size and how to draw it on any canvas.
type Figure struct {
	width, height vg.Length
	draw          func(dc draw.Canvas)
}

// Size returns the width and height of the figure in points.
func (f *Figure) Size() (w, h float64) { return f.width.Points(), f.height.Points() }

// Encode writes the figure to w in format.
func (f *Figure) Encode(w io.Writer, format Format) error {
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case SVG:
		c = vgsvg.New(f.width, f.height)
	case PNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.width, f.height), vgimg.UseDPI(pngDPI))}
	default:
		return fmt.Errorf("%w: unknown format %q (want svg or png)", chainplan.ErrUnsupported, format)
	}
	dc := draw.New(c)
	dc.SetColor(bgColor)
	dc.Fill(dc.Rectangle.Path())
	f.draw(dc)
	if format == PNG {
		_, err := c.WriteTo(w)
		return err
	}
	// The SVG names the Liberation font the PNG is drawn with; a browser without it would
	// fall back to a serif, so name the usual sans-serif fonts after it.
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return err
	}
	_, err := w.Write(bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;")))
	return err
}

// SVG returns the figure as an SVG document.
func (f *Figure) SVG() ([]byte, error) {
	var b bytes.Buffer
	if err := f.Encode(&b, SVG); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Save writes the figure to path in the format its extension names (FormatOf).
func (f *Figure) Save(path string) error {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := f.Encode(&b, format); err != nil {
		return fmt.Errorf("draw %s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
