// Command spin is the smallest Go guest that does work in a loop: spin(n)
// runs n iterations. It measures what one loop iteration costs with and
// without the per-call deadline (wazero checks the deadline at every loop
// header, with a call into Go).
package main

//go:wasmexport spin
func spin(n int32) int32 {
	s := int32(0)
	for i := int32(0); i < n; i++ {
		s += i
	}
	return s
}

//go:wasmexport nop
func nop() {}

func main() {}
