//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk"
)

func TestQuote(t *testing.T) {
	now = func() time.Time { return time.Date(2026, 11, 3, 9, 30, 15, 500, time.UTC) }
	t.Cleanup(func() { now = time.Now })
	tests := []struct{ name, input, want, wantErr string }{
		{
			name:  "prices",
			input: `{"customer":" Ada ","currency":"EUR","items":[{"description":"widget","quantity":3,"unit_cents":250},{"description":"gear","quantity":1,"unit_cents":1001}],"discount_percent":10,"valid_until":"2026-12-01T12:00:00+01:00"}`,
			want:  `{"customer":"Ada","currency":"EUR","lines":[{"description":"widget","quantity":3,"amount_cents":750},{"description":"gear","quantity":1,"amount_cents":1001}],"subtotal_cents":1751,"discount_cents":175,"total_cents":1576,"valid_until":"2026-12-01T11:00:00Z"}`,
		},
		{
			name:  "30 days by default",
			input: `{"customer":"Ada","currency":"JPY","items":[{"description":"x","quantity":65535,"unit_cents":1000000000000}]}`,
			want:  `{"customer":"Ada","currency":"JPY","lines":[{"description":"x","quantity":65535,"amount_cents":65535000000000000}],"subtotal_cents":65535000000000000,"discount_cents":0,"total_cents":65535000000000000,"valid_until":"2026-12-03T09:30:15Z"}`,
		},
		{
			name:    "every problem at once",
			input:   `{"customer":" ","currency":"XXX","items":[],"discount_percent":101}`,
			wantErr: `customer is required; currency "XXX" is not one the currencies command lists; items: 0; give 1 to 100; discount_percent must be between 0 and 100`,
		},
		{
			name:    "bad items",
			input:   `{"customer":"Ada","currency":"USD","items":[{"description":"a","quantity":0,"unit_cents":1},{"description":"b","quantity":1,"unit_cents":-1},{"description":"c","quantity":1,"unit_cents":1000000000001}]}`,
			wantErr: "items[0]: quantity must be at least 1; items[1]: unit_cents must be between 0 and 1000000000000; items[2]: unit_cents must be between 0 and 1000000000000",
		},
		{name: "too many items", input: `{"customer":"Ada","currency":"USD","items":[` + strings.Repeat(`{"description":"a","quantity":1,"unit_cents":1},`, 100) + `{"description":"a","quantity":1,"unit_cents":1}]}`, wantErr: "items: 101; give 1 to 100"},
		{name: "a quantity out of range", input: `{"customer":"Ada","currency":"USD","items":[{"description":"a","quantity":65536,"unit_cents":1}]}`, wantErr: "invalid input: json: cannot unmarshal number 65536"},
		{name: "an unknown field", input: `{"customer":"Ada","currency":"USD","items":[],"total":1}`, wantErr: `invalid input: json: unknown field "total"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sdk.Invoke(context.Background(), "quote", []byte(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
}

func TestCurrencies(t *testing.T) {
	got, err := sdk.Invoke(context.Background(), "currencies", nil)
	want := `[{"code":"EUR","name":"Euro","minor_units":2},{"code":"JPY","name":"Japanese yen","minor_units":0},{"code":"USD","name":"US dollar","minor_units":2}]`
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
}

// TestManifestSchemas: module.yaml declares the schemas the Go types
// derive, so it is never out of date with them. When it fails, run
// `station module build examples/quote`.
func TestManifestSchemas(t *testing.T) {
	m, err := manifest.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Commands map[string]struct {
			InputSchema  json.RawMessage `json:"input_schema"`
			OutputSchema json.RawMessage `json:"output_schema"`
		} `json:"commands"`
	}
	if err := json.Unmarshal(sdk.Describe(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Commands) != len(m.Commands) {
		t.Errorf("the module registers %d commands, module.yaml lists %d", len(doc.Commands), len(m.Commands))
	}
	for _, c := range m.Commands {
		d := doc.Commands[c.Name]
		if !sameJSON(t, c.InputSchema, d.InputSchema) || !sameJSON(t, c.OutputSchema, d.OutputSchema) {
			t.Errorf("%s: module.yaml's schemas are not the ones the Go types derive: run station module build examples/quote", c.Name)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a string, b json.RawMessage) bool {
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}
