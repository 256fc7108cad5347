package workflow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/station-dev/station/internal/store"
)

// installed is a Modules of fixed modules.
type installed map[string]*ModuleInfo

func (m installed) Module(_ context.Context, id string) (*ModuleInfo, error) {
	if info := m[id]; info != nil {
		return info, nil
	}
	return nil, fmt.Errorf("module %s: %w", id, store.ErrNotFound)
}

// TestCheckCommands checks that a command a module does not declare is a
// problem, with the closest declared command when one is close.
func TestCheckCommands(t *testing.T) {
	wf, err := Parse("w.yaml", []byte(`steps:
  - {id: a, uses: dave/stripe-invoicing create-invoce}
  - {id: b, uses: dave/stripe-invoicing refund}
  - {id: c, uses: dave/stripe-invoicing create-invoice}
  - {id: d, uses: nobody/none run}
`))
	if err != nil {
		t.Fatal(err)
	}
	mods := installed{"dave/stripe-invoicing": {ID: "dave/stripe-invoicing", Version: "1.4.0",
		Commands: []string{"create-invoice", "list-invoices"}}}
	r, err := Check(context.Background(), wf, mods, "", nil)
	if !errors.Is(err, ErrCheck) {
		t.Fatalf("Check = %v, want ErrCheck", err)
	}
	want := []string{
		"module nobody/none is not installed (install it with: station module install DIR)",
		`module dave/stripe-invoicing has no command "create-invoce"; did you mean "create-invoice"?`,
		`module dave/stripe-invoicing has no command "refund" (its commands: [create-invoice list-invoices])`,
	}
	if !reflect.DeepEqual(r.Problems, want) {
		t.Errorf("problems:\n got %q\nwant %q", r.Problems, want)
	}
}
