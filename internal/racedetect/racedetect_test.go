package racedetect

import "testing"

func TestScale(t *testing.T) {
	want := 1000
	if Enabled {
		want = 100
	}
	if got := Scale(1000); got != want {
		t.Fatalf("Scale(1000) = %d with Enabled %v, want %d", got, Enabled, want)
	}
	if Scale(5) != 5 {
		t.Fatal("a count of 10 or less is kept")
	}
}
