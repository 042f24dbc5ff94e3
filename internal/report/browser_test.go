//go:build browser

package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReportInBrowser renders the page in headless Chromium (Debian's package; make
// test-browser installs it) with every host name unresolvable, and checks that it loads:
// the rendered DOM holds every section and every picture, the console reports nothing,
// the page asked for no host the browser does not ask for on an empty page (its own
// update and time checks), and a screenshot is taken (left in $CHAINPLAN_SCREENSHOT when
// set, for a person to look at).
func TestReportInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: make test-browser installs it (apt-get install chromium)")
	}
	svc := storedRun(t)
	p, err := Build(context.Background(), svc, 1, Options{Version: "browser-test"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := os.Getenv("CHAINPLAN_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "report.png")
	}
	blank := filepath.Join(dir, "blank.html")
	if err := os.WriteFile(blank, []byte("<!DOCTYPE html><title>blank</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	browse := func(file string, args ...string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
			"--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + filepath.Join(dir, "profile"),
			"--window-size=1200,4000", "--virtual-time-budget=3000"}
		cmd := exec.CommandContext(ctx, chromium, append(append(base, args...), "file://"+file)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	hosts := func(netLog string) map[string]bool {
		t.Helper()
		data, err := os.ReadFile(netLog)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, m := range regexp.MustCompile(`"url":"(?:https?|wss?|ftp)://([^/"?:]+)`).FindAllStringSubmatch(string(data), -1) {
			out[m[1]] = true
		}
		return out
	}
	browse(blank, "--dump-dom", "--log-net-log="+filepath.Join(dir, "blank.json"))
	dom, logs := browse(page, "--dump-dom", "--log-net-log="+filepath.Join(dir, "page.json"))
	own := hosts(filepath.Join(dir, "blank.json"))
	for h := range hosts(filepath.Join(dir, "page.json")) {
		if !own[h] {
			t.Errorf("the page asked for %s", h)
		}
	}
	for _, id := range []string{"provenance", "stages", "frontier", "plans", "history", "plan-1", "plan-2"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("the rendered page has no element %q", id)
		}
	}
	if got := strings.Count(dom, "<svg"); got != 4 {
		t.Errorf("the rendered page has %d SVG pictures, want 4", got)
	}
	_, shotLogs := browse(page, "--screenshot="+shot)
	for _, line := range strings.Split(logs+shotLogs, "\n") {
		// Console messages of the page and failed loads; the D-Bus and GPU complaints of
		// a headless machine are the browser's, not the page's.
		if strings.Contains(line, "CONSOLE") || regexp.MustCompile(`net::ERR_|Failed to load|Refused to`).MatchString(line) {
			t.Errorf("browser log: %s", line)
		}
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Errorf("no screenshot of the page (%v)", err)
	}
}
