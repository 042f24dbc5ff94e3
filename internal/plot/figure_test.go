package plot

import (
	"bytes"
	"errors"
	"image/png"
	"path/filepath"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"a.svg": SVG, "b/c.PNG": PNG} {
		if got, err := FormatOf(path); err != nil || got != want {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"a.pdf", "noext"} {
		if _, err := FormatOf(path); !errors.Is(err, chainplan.ErrUnsupported) {
			t.Errorf("FormatOf(%q): got %v, want ErrUnsupported", path, err)
		}
	}
}

// TestPNG checks that a PNG decodes at the figure's size at 144 dpi, and Save by extension.
func TestPNG(t *testing.T) {
	f, err := Frontier(&FrontierData{Series: []Series{{Name: "rotor", Points: []Point{{1, 2}, {3, 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f.Encode(&b, PNG); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	w, h := f.Size()
	if got := img.Bounds().Size(); got.X != int(w*2+0.5) || got.Y != int(h*2+0.5) {
		t.Errorf("PNG is %v pixels, want %.0f×%.0f", got, w*2, h*2)
	}
	dir := t.TempDir()
	if err := f.Save(filepath.Join(dir, "f.svg")); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(filepath.Join(dir, "f.gif")); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("Save .gif: got %v, want ErrUnsupported", err)
	}
}
