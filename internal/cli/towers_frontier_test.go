package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/profile"
)

// TestTowersFrontierAdviceHolds: every refusal of frontier on towers names what gives
// their frontier, and following it works: the advice never names an algorithm that has
// none (it named multichain-linear, which frontier then called unknown).
func TestTowersFrontierAdviceHolds(t *testing.T) {
	towers := towerFiles(t)
	refusals := []struct {
		args []string
		want string
	}{
		{append([]string{"frontier", "--algo", "rotor"}, towers...), "(--algo multichain)"},
		{append([]string{"frontier", "--algo", "multichain-linear"}, towers...), "--algo multichain-linear has no frontier"},
		{[]string{"frontier", "--algo", "rotor", "--chain", towers[1], "--loss", towers[5]}, "(--algo multichain)"},
	}
	for _, tt := range refusals {
		code, _, errs := run(t, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) || strings.Contains(errs, "multichain-linear)") {
			t.Fatalf("%v: exit %d %q; want 2 naming %q", tt.args, code, errs, tt.want)
		}
		if !strings.Contains(errs, "--algo multichain") {
			t.Fatalf("%v: %q does not say what gives the frontier", tt.args, errs)
		}
	}
	// What the advice names works.
	if code, out, errs := run(t, append([]string{"frontier", "--algo", "multichain"}, towers...)...); code != 0 ||
		!strings.HasPrefix(out, "multichain frontier:") {
		t.Fatalf("frontier --algo multichain: exit %d\n%s%s", code, out, errs)
	}
	// --algo multichain on one chain points back to the single-chain frontiers.
	if code, _, errs := run(t, "frontier", "--algo", "multichain", "--chain", towers[1]); code != exitBadInput ||
		!strings.Contains(errs, "whose frontier is --algo rotor, rotor-ops or revolve's") {
		t.Fatalf("multichain on one chain: exit %d %q", code, errs)
	}
}

// TestTowersFrontierOfARun: the message that refuses a stored profile of towers to a
// single-chain command names frontier --run, which gives the towers' frontier; --run of
// one chain gives its own.
func TestTowersFrontierOfARun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "chainplan.db")
	p := syntheticProfile("triplet", 5, 2, 24)
	p.Meta.Extra = map[string]string{profile.KeyTowers: `{"lengths": [5], "branches": [0, 0, 0], "input_bytes": [32768, 32768, 32768]}`}
	mustIngest(t, db, writeProfile(t, dir, "triplet.arrow", p))
	mustIngest(t, db, writeProfile(t, dir, "one.arrow", syntheticProfile("one", 5, 2, 24)))
	code, _, errs := runDB(t, db, "solve", "--run", "1", "--algo", "rotor", "--budget", "1GiB")
	if code != exitBadInput || !strings.Contains(errs, "chainplan frontier --run 1 gives their frontier") {
		t.Fatalf("rotor on a towers run: exit %d %s", code, errs)
	}
	code, out, errs := runDB(t, db, "frontier", "--run", "1")
	if code != 0 || !strings.HasPrefix(out, "multichain frontier:") {
		t.Fatalf("frontier --run of towers: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runDB(t, db, "frontier", "--run", "1", "--algo", "rotor"); code != exitBadInput ||
		!strings.Contains(errs, "their frontier is --algo multichain's, not rotor's") {
		t.Fatalf("rotor frontier of a towers run: exit %d %s", code, errs)
	}
	if code, out, errs := runDB(t, db, "frontier", "--run", "2"); code != 0 || !strings.HasPrefix(out, "rotor frontier:") {
		t.Fatalf("frontier --run of one chain: exit %d\n%s%s", code, out, errs)
	}
}
