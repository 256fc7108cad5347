package manifest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.golden with the current error text")

// TestGoldenErrors parses every testdata/bad/*.yaml and compares the full
// error text with the .golden file next to it. Run with -update to rewrite
// the golden files after an intended change, then review the diff.
func TestGoldenErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/bad/*.yaml")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(FileName, data)
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", file, m)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Parse(%s) error:\ngot:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}
