package planner_test

import (
	"reflect"
	"regexp"
	"runtime"
	"testing"

	"github.com/chainplan/chainplan/planner"
)

// anonymous matches the name the runtime gives a function literal ("pkg.outer.func1",
// "pkg.init.func3"): a function a reader cannot look up by name.
var anonymous = regexp.MustCompile(`\.func\d+(\.|$)`)

// TestRegistryNamesItsEntryPoints: every function an entry of the registry holds is a
// named function or method, so that a reader follows an algorithm's name from the table to
// the planner that runs it (madpipe: solveMadPipe, then madpipe.Solve) instead of meeting a
// function literal built in a table or a factory.
func TestRegistryNamesItsEntryPoints(t *testing.T) {
	checked := 0
	for _, e := range planner.Entries() {
		for _, funcs := range []any{e.Schedule, e.Pipeline, e.Multichain, e.Parallel, e.Simulation} {
			v := reflect.ValueOf(funcs)
			if v.IsNil() {
				continue
			}
			v = v.Elem()
			for i := range v.NumField() {
				f := v.Field(i)
				if f.Kind() != reflect.Func || f.IsNil() {
					continue
				}
				checked++
				name := runtime.FuncForPC(f.Pointer()).Name()
				if anonymous.MatchString(name) {
					t.Errorf("%s: %s is %s, a function literal: name it", e.Name, v.Type().Field(i).Name, name)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no function of the registry was checked")
	}
}
