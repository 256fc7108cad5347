package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/fixture"
)

// TestGoldenErrors parses every testdata/bad/*.yaml and compares the full
// error text with the .golden file next to it. After an intended change,
// rewrite the golden files with
//
//	go test ./manifest -run Golden -update
//
// and review the diff (fixture.Golden).
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
			fixture.Golden(t, strings.TrimSuffix(file, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}
