package chainplan

import (
	"os"
	"regexp"
	"testing"
)

// TestVersionMatchesPyproject keeps the Go constant and the Python package's version one.
func TestVersionMatchesPyproject(t *testing.T) {
	b, err := os.ReadFile("pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version = "([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("pyproject.toml has no version line")
	}
	if string(m[1]) != Version {
		t.Errorf("chainplan.Version %q, pyproject.toml %q", Version, m[1])
	}
}
