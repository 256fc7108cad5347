package config

import (
	"strings"
	"testing"
)

// TestAdvisoriesBlock: advisories.block takes the levels and none, is
// critical by default, and anything else is refused with the levels (or
// the one it misspells).
func TestAdvisoriesBlock(t *testing.T) {
	if got := Default().Advisories.Block; got != "critical" {
		t.Errorf("default advisories.block = %q, want critical", got)
	}
	for _, level := range []string{"low", "medium", "high", "critical", "none"} {
		c, err := Parse(FileName, []byte("advisories:\n  block: "+level+"\n"))
		if err != nil || c.Advisories.Block != level {
			t.Errorf("block: %s = %+v, %v", level, c, err)
		}
	}
	c, err := Parse(FileName, []byte("advisories:\n"))
	if err != nil || c.Advisories.Block != "critical" {
		t.Errorf("an empty advisories section = %+v, %v; want the default", c, err)
	}
	for doc, want := range map[string]string{
		"advisories:\n  block: hihg\n":     `config.yaml:2:10: advisories.block: unknown level "hihg"; did you mean "high"?`,
		"advisories:\n  block: severe\n":   `unknown level "severe" (known levels: low, medium, high, critical, none)`,
		"advisories:\n  block: Critical\n": `did you mean "critical"?`,
		"advisories:\n  block: 3\n":        "advisories.block: must be a string",
		"advisories:\n  block: [high]\n":   "advisories.block: must be a string",
		"advisories:\n  block: \"\"\n":     `unknown level ""`,
		"advisories: high\n":               "advisories: must be a mapping",
	} {
		_, err := Parse(FileName, []byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", doc, err, want)
		}
	}
}

// TestAdvisoriesBlocks: an advisory blocks at or above the level, never
// under none, and one without a known level never blocks.
func TestAdvisoriesBlocks(t *testing.T) {
	tests := []struct {
		block, level string
		want         bool
	}{
		{"critical", "critical", true},
		{"critical", "high", false},
		{"high", "critical", true},
		{"high", "high", true},
		{"high", "medium", false},
		{"low", "low", true},
		{"none", "critical", false},
		{"low", "", false},
		{"low", "CRITICAL", false}, // levels are lower case; the hub's upper case is hub.OSV.Level's to fold
		{"", "critical", false},
	}
	for _, tt := range tests {
		if got := (Advisories{Block: tt.block}).Blocks(tt.level); got != tt.want {
			t.Errorf("block %q: Blocks(%q) = %v, want %v", tt.block, tt.level, got, tt.want)
		}
	}
}
