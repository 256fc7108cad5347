package sdk

import (
	"testing"
	"unsafe"
)

// BenchmarkFastJSONDecode is the fast path's decoding of a typical
// command input, natively (inside the station every call and loop
// iteration also costs an exit to the host; bench/ measures that).
func BenchmarkFastJSONDecode(b *testing.B) {
	doc := []byte(`{"s":"Ada Lovelace, Analytical Engine notes","b":true,"i":-12345,"i8":7,"i32":1,"i64":9007199254740993,"u":678,"u8":255,"u16":1,"u64":1,"f32":1.5,"in":{"x":3,"S":"inner"},"named":"n","NoTag":"t"}`)
	var v fjAll
	for b.Loop() {
		if !decodeFast(doc, unsafe.Pointer(&v), fjPlan) {
			b.Fatal("the fast path declined")
		}
	}
}
