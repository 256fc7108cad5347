package fsgate

import "testing"

// Where openat2 is unavailable (kernels before 5.6, or a seccomp filter
// that refuses it, as some container runtimes install) the gate opens each
// directory on the way with openat(O_NOFOLLOW), one element at a time.
// There that walk is how every operation resolves its path, so the suites
// that resolve paths must end exactly as they do with openat2.
func TestWithoutOpenat2(t *testing.T) {
	testNoOpenat2 = true
	defer func() { testNoOpenat2 = false }()
	for _, s := range []struct {
		name string
		test func(*testing.T)
	}{
		{"attacks", TestAttacks},
		{"races", TestRaceAfterDecision},
		{"swap hammer", TestSymlinkSwapHammer},
		{"decisions", TestDecisions},
		{"globs", TestStarAndDoubleStar},
		{"above", TestAbove},
		{"readlink", TestReadlinkHidesHostPaths},
		{"across mounts", TestAcrossMounts},
		{"quota", TestQuota},
		{"conformance", TestPathConformance}, // these two build a wasm guest; skipped under -short
		{"guest", TestGuest},
	} {
		t.Run(s.name, s.test)
	}
}
