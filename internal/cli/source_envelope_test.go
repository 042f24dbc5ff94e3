package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPipesimThroughTheEnvelope: pipesim reads its --chain through the source envelope
// (service.Resolve) as the other commands do: a bundle, a missing file and an invalid one
// are refused with the message and the exit status pipeline gives the same file.
func TestPipesimThroughTheEnvelope(t *testing.T) {
	dir := t.TempDir()
	for name, path := range map[string]string{
		"bundle":  writeBundle(t),
		"missing": filepath.Join(dir, "missing.json"),
		"invalid": writeTemp(t, "bad.json", `{"format": "chainplan.chain/v1", "stages": "no"}`),
	} {
		code, _, errs := run(t, "pipesim", "--chain", path, "--stages", "1", "--schedule", "gpipe", "--microbatches", "2")
		pcode, _, perrs := run(t, "pipeline", "--chain", path, "--gpus", "1", "--memory", "1GiB", "--bandwidth", "12GB/s")
		if code != 2 || code != pcode || errs != perrs {
			t.Errorf("%s: pipesim exit %d %q; pipeline exit %d %q", name, code, errs, pcode, perrs)
		}
		if name == "bundle" && !strings.Contains(errs, "bundle of 2 towers joined at the loss, not one chain") {
			t.Errorf("pipesim on a bundle: %q", errs)
		}
	}
}

// TestTowerFilesThroughTheEnvelope: the commands that take towers as files (solve,
// frontier, plot frontier) read them through the source envelope: a bad set is refused by
// each with the envelope's message (the one Python's calls get) and exit status 2.
func TestTowerFilesThroughTheEnvelope(t *testing.T) {
	image, text := writeTemp(t, "image.json", imageTower), writeTemp(t, "text.json", textTower)
	bundle := writeBundle(t)
	svg := filepath.Join(t.TempDir(), "f.svg")
	for _, tt := range []struct {
		towers []string
		want   string
	}{
		{[]string{"--chain", image, "--chain", text, "--keep-input-grad", "true"},
			"source: towers: keep_input_grad (--keep-input-grad) has 1 values for 2 towers"},
		{[]string{"--chain", image, "--chain", bundle}, "source: towers: " + bundle + " is a bundle: give it alone"},
	} {
		var first string
		for _, cmd := range [][]string{{"solve", "--algo", "multichain", "--budget", "70"}, {"frontier", "--algo", "multichain"},
			{"plot", "frontier", "-o", svg}} {
			code, _, errs := run(t, append(cmd, tt.towers...)...)
			if code != 2 || !strings.Contains(errs, tt.want) || (first != "" && errs != first) {
				t.Errorf("%s: exit %d %q; want exit 2 with %q, as %q", cmd[0], code, errs, tt.want, first)
			}
			first = errs
		}
	}
}
