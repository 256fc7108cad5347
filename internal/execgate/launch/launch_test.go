package launch

import (
	"slices"
	"syscall"
	"testing"
)

func TestSpecRoundTrip(t *testing.T) {
	filter := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	cases := []struct {
		flags     []string
		env, argv []string
	}{
		{nil, nil, []string{"true"}},
		{[]string{"landlock"}, []string{"A=1", "B="}, []string{"cat", "", "x y"}},
		{[]string{"landlock", "caps"}, nil, []string{"tee", "-a", "f"}},
	}
	for _, c := range cases {
		got, flags, path, env, argv, ok := parse(Encode(filter, c.flags, "/usr/bin/x", c.env, c.argv))
		if !ok || !slices.Equal(got, filter) || path != "/usr/bin/x" || !slices.Equal(env, c.env) || !slices.Equal(argv, c.argv) ||
			flags.landlock != slices.Contains(c.flags, "landlock") || flags.caps != slices.Contains(c.flags, "caps") {
			t.Errorf("parse(Encode(%v)) = %v %+v %q %q %q %v", c, got, flags, path, env, argv, ok)
		}
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	good := Encode([]byte{1, 2, 3, 4, 5, 6, 7, 8}, nil, "/bin/true", nil, []string{"true"})
	for name, b := range map[string][]byte{
		"empty":           nil,
		"short header":    {1, 0},
		"filter too long": {0xff, 0xff, 0, 0, 1},
		"negative length": {0xff, 0xff, 0xff, 0xff},
		"unterminated":    good[:len(good)-1],
		"unknown flag":    Encode(nil, []string{"bogus"}, "/bin/true", nil, []string{"true"}),
		"no argv":         Encode(nil, nil, "/bin/true", []string{"A=1"}, nil),
		"no path":         Encode(nil, nil, "", nil, []string{"true"}),
		"no env end":      append([]byte{0, 0, 0, 0}, "\x00/bin/true\x00A=1\x00"...),
	} {
		if _, _, _, _, _, ok := parse(b); ok {
			t.Errorf("%s: parse(%q) accepted it", name, b)
		}
	}
}

func TestReport(t *testing.T) {
	var buf []byte
	buf = append(append(append([]byte("confine"), 0), appendUint(nil, uint64(syscall.EACCES))...), 0)
	buf = append(buf, "landlock_restrict_self"...)
	r, ok := ParseReport(buf)
	if !ok || r.Stage != "confine" || r.Errno != syscall.EACCES || r.Message != "landlock_restrict_self" {
		t.Fatalf("ParseReport = %+v, %v", r, ok)
	}
	for _, bad := range []string{"", "x", "\x000\x00m", "s\x00\x00m", "s\x00x1\x00m", "s\x00123456789\x00m"} {
		if r, ok := ParseReport([]byte(bad)); ok {
			t.Errorf("ParseReport(%q) = %+v, want a refusal", bad, r)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Encode([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []string{"landlock"}, "/bin/true", []string{"A=1"}, []string{"true"}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		filter, _, path, env, argv, ok := parse(b)
		if !ok {
			return
		}
		if path == "" || len(argv) == 0 || len(filter) > len(b) {
			t.Fatalf("parse(%q) accepted path %q argv %q", b, path, argv)
		}
		for _, s := range append(env, argv...) {
			for i := 0; i < len(s); i++ {
				if s[i] == 0 {
					t.Fatalf("a NUL inside %q", s)
				}
			}
		}
	})
}
