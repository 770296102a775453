package main

import "testing"

func TestNodeAtLeast(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"v22.12.0": true, "v22.12.1": true, "v23.0.0": true, "v24.1.0-nightly": true,
		"v22.11.9": false, "v20.20.2": false, "v22": false, "nonsense": false,
	} {
		if got := nodeAtLeast(v, wranglerNode); got != want {
			t.Errorf("nodeAtLeast(%q) = %v, want %v", v, got, want)
		}
	}
}
