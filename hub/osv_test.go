package hub

import (
	"reflect"
	"testing"
)

// TestAffectsFailsClosed: a bound that is not a semantic version (only a
// hub that is not a station hub, or a broken one, writes one) is no bound,
// so the range is wider, never narrower: an introduced that does not parse
// is every version from the first, and a fixed or last_affected that does
// not parse leaves the range open. Ranges says so too, as show prints it.
func TestAffectsFailsClosed(t *testing.T) {
	for _, tt := range []struct {
		r       Range
		version string
		want    bool
	}{
		{Range{Introduced: "0", Fixed: "bogus"}, "1.0.0", true},
		{Range{Introduced: "0", Fixed: "v2.0.0"}, "1.0.0", true},
		{Range{Introduced: "bogus", Fixed: "2.0.0"}, "1.0.0", true},
		{Range{Introduced: "v1.0.0", Fixed: "2.0.0"}, "1.0.0", true},
		{Range{Introduced: "0", LastAffected: "1.0.0 "}, "1.5.0", true},
		{Range{Introduced: "", Fixed: "2.0.0"}, "1.0.0", true},
		// Bounds that parse still bound.
		{Range{Introduced: "bogus", Fixed: "2.0.0"}, "2.0.0", false},
		{Range{Introduced: "1.0.0", Fixed: "bogus"}, "0.9.0", false},
		{Range{Introduced: "0", Fixed: "1.0.1"}, "1.0.0+build", true},
		{Range{Introduced: "0", Fixed: "1.0.1"}, "1.0.1-rc.1", true},
		{Range{Introduced: "1.0.0", Fixed: "1.0.1"}, "1.0.0-rc.1", false},
		// A version that is not one is affected by nothing (the caller says
		// it is unknown).
		{Range{Introduced: "0"}, "(devel)", false},
	} {
		if got := tt.r.Affects(tt.version); got != tt.want {
			t.Errorf("%+v.Affects(%s) = %v, want %v", tt.r, tt.version, got, tt.want)
		}
	}
	a := OSV{Affected: []OSVAffect{{Package: OSVPackage{Ecosystem: Ecosystem, Name: "dave/x"}, Ranges: []OSVRange{
		{Type: "SEMVER", Events: []OSVEvent{{Introduced: "v1.0.0"}, {Fixed: "2.0.0"}}},
		{Type: "SEMVER", Events: []OSVEvent{{Introduced: "3.0.0"}, {Fixed: "three-point-one"}, {Introduced: "4.0.0"}, {LastAffected: "4.0.x"}}},
	}}}}
	want := []Range{{Introduced: "0", Fixed: "2.0.0"}, {Introduced: "3.0.0"}, {Introduced: "4.0.0"}}
	if got := a.Ranges("dave/x"); !reflect.DeepEqual(got, want) {
		t.Errorf("Ranges = %+v, want %+v", got, want)
	}
	for v, want := range map[string]bool{"0.1.0": true, "2.0.0": false, "3.5.0": true, "4.2.0": true} {
		if got := a.AffectsVersion("dave/x", v); got != want {
			t.Errorf("AffectsVersion(%s) = %v, want %v", v, got, want)
		}
	}
	if got := a.FixedIn("dave/x", "3.5.0"); got != "" {
		t.Errorf("FixedIn(3.5.0) = %q, want none (three-point-one is no version)", got)
	}
}
