package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli/clitest"
)

// TestEveryPrinterEscapes checks the error of a command as Run prints it;
// each command's package feeds the hostile text through its own printers
// (internal/cli/workflow: printers_test.go, ...).
func TestEveryPrinterEscapes(t *testing.T) {
	h := clitest.Hostile
	var errb, outb bytes.Buffer
	// Here the path is the hostile text; a hub's message with a newline may
	// not start a line of its own either.
	code := Run(context.Background(), []string{"run", "a/b", "c", "--input", "@" + t.TempDir() + "/" + h}, IO{In: strings.NewReader(""), Out: &outb, Err: &errb})
	if code != ExitError {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	clitest.CheckPrinted(t, "an error", errb.String())
}
