package hub

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCodesDocumented keeps the table of error codes in
// docs/hub-protocol.md in step with Codes: every code has its row with its
// name and HTTP status, and every row is a defined code.
func TestCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/hub-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Codes() {
		row := fmt.Sprintf("| %d | `%s` | %d | %s |", int(c), c, c.HTTPStatus(), c.Description())
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/hub-protocol.md lacks the row\n%s", row)
		}
	}
	rows := regexp.MustCompile("(?m)^\\| (\\d{4}) \\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1)
	if len(rows) != len(Codes()) {
		t.Errorf("the documentation has %d code rows, the package %d codes", len(rows), len(Codes()))
	}
	for _, r := range rows {
		n, _ := strconv.Atoi(r[1])
		if Code(n).String() != r[2] {
			t.Errorf("documented code %s %s is %s in the package", r[1], r[2], Code(n))
		}
	}
}

func TestErrorForms(t *testing.T) {
	e := Errorf(CodeRevisionConflict, "team %q is at revision %d", "acme", 4)
	if got, want := e.Error(), `team "acme" is at revision 4 (hub error 1407 revision_conflict)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("push: %w", e)
	if CodeOf(wrapped) != CodeRevisionConflict || CodeOf(errors.New("x")) != 0 {
		t.Error("CodeOf does not find the code through wrapping")
	}
	if Code(9999).String() != "code_9999" || Code(9999).HTTPStatus() != 500 {
		t.Error("an unknown code is not rendered safely")
	}
}
