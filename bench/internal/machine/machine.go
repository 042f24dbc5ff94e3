// Package machine describes the computer a benchmark ran on, for the reports the
// benchmark commands under bench/ write.
package machine

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Describe returns the CPU model (from /proc/cpuinfo, "unknown CPU" elsewhere), the
// logical CPU count, GOMAXPROCS and the Go toolchain and platform, in one line.
func Describe() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				model = strings.TrimSpace(line[strings.Index(line, ":")+1:])
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d logical CPUs (GOMAXPROCS %d), %s %s/%s", model, runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
