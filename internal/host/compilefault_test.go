package host

import "testing"

// TestCompileChildFaultIsTheMemoryBound: under RLIMIT_AS the child's Go
// runtime sometimes faults in a path that does not report the failed mmap
// (CI saw "SIGSEGV: segmentation violation / PC=0x4358fd m=4 sigcode=1
// addr=0x0"); that is the bound, while a Go-level panic is not.
func TestCompileChildFaultIsTheMemoryBound(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		fault  bool
	}{
		{"SIGSEGV: segmentation violation\nPC=0x4358fd m=4 sigcode=1 addr=0x0\n", true},
		{"fatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4358fd]\n", true},
		{"panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4358fd]\n", false},
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n", true},
		{"runtime: failed to create new OS thread (have 5 already; errno=12)\nfatal error: newosproc\n", true},
		{"wazero: invalid function type\n", false},
		{"", false},
	} {
		if got := runtimeFault(tc.stderr); got != tc.fault {
			t.Errorf("runtimeFault(%q) = %v, want %v", tc.stderr, got, tc.fault)
		}
	}
}
