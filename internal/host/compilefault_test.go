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

// TestLinearMemoryNeverHoldsMoreThanItsLimit: the buffer grows
// geometrically but its capacity stays within the limit, and a grow past
// the limit is refused and remembered.
func TestLinearMemoryNeverHoldsMoreThanItsLimit(t *testing.T) {
	const page, limit = 65536, 10 * 65536
	l := &linearMemory{limit: limit}
	for size := uint64(page); size <= limit; size += page {
		b := l.Reallocate(size)
		if uint64(len(b)) != size || uint64(cap(b)) > limit {
			t.Fatalf("grow to %d: len %d cap %d, limit %d", size, len(b), cap(b), limit)
		}
		for i := range b {
			if b[i] != 0 && i >= int(size-page) {
				t.Fatalf("grow to %d: byte %d not zero", size, i)
			}
		}
		if size > page && b[size-page-1] != 1 {
			t.Fatalf("grow to %d lost what the memory held", size)
		}
		b[size-1] = 1 // kept by the next grow
	}
	if b := l.Reallocate(limit + page); b != nil || l.refused != limit+page {
		t.Errorf("grow past the limit: %d bytes, refused %d", len(b), l.refused)
	}
}
