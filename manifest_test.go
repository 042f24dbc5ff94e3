package chainplan

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestManifestShipsTheGoCore keeps MANIFEST.in in step with the Go packages the wheel
// compiles: the sdist builds the extension from source, and a package directory left out
// of it (renaming profiler/ to profilearrow/ did that) makes every build from the sdist
// fail, pip install of the sdist and `make wheel` included.
func TestManifestShipsTheGoCore(t *testing.T) {
	b, err := os.ReadFile("MANIFEST.in")
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]bool{"": true} // the module root: `include *.go`
	for _, m := range regexp.MustCompile(`(?m)^recursive-include (\S+) \*\.go$`).FindAllSubmatch(b, -1) {
		shipped[string(m[1])] = true
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./pybind", "./cmd/chainplan").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/chainplan/chainplan"
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != module && !strings.HasPrefix(pkg, module+"/") {
			continue
		}
		dir := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		covered := false
		for prefix := range shipped {
			if prefix == "" && dir == "" ||
				prefix != "" && (dir == prefix || strings.HasPrefix(dir, prefix+"/")) {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("MANIFEST.in ships no Go files of %s, which the extension compiles: add `recursive-include %s *.go`",
				pkg, strings.SplitN(dir, "/", 2)[0])
		}
	}
}
