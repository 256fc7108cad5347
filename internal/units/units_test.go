package units

import (
	"math"
	"testing"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{1025, "1.0 KiB"},
		{64 << 20, "64 MiB"},
		{1<<20 + 64<<10, "1088 KiB"}, // exact: a limit reads as it was set
		{5 << 30, "5 GiB"},
		{5<<30 + 512<<20, "5632 MiB"},
		{1<<30 - 1<<10, "1.0 GiB"}, // 1048575 KiB is exact but too long to read
		{1<<20 - 1, "1.0 MiB"},     // not "1024.0 KiB"
		{12345678, "11.8 MiB"},
		{1000 << 20, "1000 MiB"},
		{10000 << 10, "9.8 MiB"},
		{1 << 40, "1 TiB"},
		{3 << 60, "3 EiB"},
		{math.MaxInt64, "8.0 EiB"},
		{-2048, "-2 KiB"},
		{math.MinInt64, "-8 EiB"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
