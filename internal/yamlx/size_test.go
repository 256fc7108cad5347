package yamlx

import (
	"strings"
	"testing"
	"time"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string
	}{
		{"65536", 65536, ""},
		{"100B", 100, ""},
		{"64KiB", 64 << 10, ""},
		{"64MiB", 64 << 20, ""},
		{"1 GiB", 1 << 30, ""},
		{"0", 0, ""},
		{"64MB", 0, "unknown unit"},
		{"MiB", 0, "is not a size"},
		{"", 0, "is not a size"},
		{"-1KiB", 0, "is not a size"},
		{"99999999999999999999", 0, "too large"},
		{"17179869184GiB", 0, "too large"},
	} {
		got, err := ParseSize(tc.in)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, %q", tc.in, got, err, tc.want, tc.err)
		}
		if tc.err == "" {
			if back, err := ParseSize(FormatSize(got)); err != nil || back != got {
				t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", got, FormatSize(got), back, err)
			}
		}
	}
	for n, want := range map[uint64]string{0: "0B", 100: "100B", 1536 << 10: "1536KiB", 3 << 20: "3MiB", 2 << 30: "2GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{time.Hour: "1h", 10 * time.Minute: "10m", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s", 2*time.Hour + time.Second: "2h0m1s"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
