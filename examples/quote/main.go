// Command quote is an example Station module that prices an order: line
// items in, totals out, and no permissions. Its commands take and return
// Go structs, so `station module build` derives their JSON Schemas and
// writes them into module.yaml: the station checks every input against its
// command's schema before the module runs, and MCP clients see both. Build
// it with
//
//	station module build examples/quote
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/station-dev/station/sdk"
)

func init() {
	sdk.Handle("quote", quote)
	sdk.Handle("currencies", currencies)
}

func main() {}

// QuoteInput is the input of quote.
type QuoteInput struct {
	Customer        string     `json:"customer" jsonschema:"who the quote is for"`
	Currency        string     `json:"currency" jsonschema:"an ISO 4217 code the currencies command lists"`
	Items           []Item     `json:"items" jsonschema:"what is ordered: 1 to 100 items"`
	DiscountPercent float64    `json:"discount_percent,omitempty" jsonschema:"taken off the subtotal, 0 to 100"`
	ValidUntil      *time.Time `json:"valid_until,omitempty" jsonschema:"when the quote expires; 30 days from now if absent"`
}

// Item is one line of an order.
type Item struct {
	Description string `json:"description"`
	Quantity    uint16 `json:"quantity" jsonschema:"how many, at least 1"`
	UnitCents   int64  `json:"unit_cents" jsonschema:"the price of one in the currency's minor unit, 0 to 10^12"`
}

// Quote is the result of quote.
type Quote struct {
	Customer      string    `json:"customer"`
	Currency      string    `json:"currency"`
	Lines         []Line    `json:"lines"`
	SubtotalCents int64     `json:"subtotal_cents"`
	DiscountCents int64     `json:"discount_cents"`
	TotalCents    int64     `json:"total_cents"`
	ValidUntil    time.Time `json:"valid_until"`
}

// Line is one priced line of a quote.
type Line struct {
	Description string `json:"description"`
	Quantity    uint16 `json:"quantity"`
	AmountCents int64  `json:"amount_cents"`
}

// Bounds on an order: with them no sum overflows an int64.
const (
	maxItems     = 100
	maxUnitCents = 1_000_000_000_000
)

// validity is how long a quote holds when the input does not say.
const validity = 30 * 24 * time.Hour

// now is the clock quote reads; tests stop it.
var now = time.Now

func quote(ctx context.Context, in QuoteInput) (Quote, error) {
	var problems []string
	if strings.TrimSpace(in.Customer) == "" {
		problems = append(problems, "customer is required")
	}
	if _, ok := known[in.Currency]; !ok {
		problems = append(problems, fmt.Sprintf("currency %q is not one the currencies command lists", in.Currency))
	}
	if len(in.Items) == 0 || len(in.Items) > maxItems {
		problems = append(problems, fmt.Sprintf("items: %d; give 1 to %d", len(in.Items), maxItems))
	}
	if in.DiscountPercent < 0 || in.DiscountPercent > 100 {
		problems = append(problems, "discount_percent must be between 0 and 100")
	}
	q := Quote{Customer: strings.TrimSpace(in.Customer), Currency: in.Currency, Lines: []Line{}}
	for i, it := range in.Items {
		if it.Quantity == 0 {
			problems = append(problems, fmt.Sprintf("items[%d]: quantity must be at least 1", i))
		}
		if it.UnitCents < 0 || it.UnitCents > maxUnitCents {
			problems = append(problems, fmt.Sprintf("items[%d]: unit_cents must be between 0 and %d", i, maxUnitCents))
		}
		amount := int64(it.Quantity) * it.UnitCents
		q.Lines = append(q.Lines, Line{Description: it.Description, Quantity: it.Quantity, AmountCents: amount})
		q.SubtotalCents += amount
	}
	if len(problems) > 0 {
		return Quote{}, errors.New(strings.Join(problems, "; "))
	}
	q.DiscountCents = int64(float64(q.SubtotalCents)*in.DiscountPercent/100 + 0.5)
	q.TotalCents = q.SubtotalCents - q.DiscountCents
	if in.ValidUntil != nil {
		q.ValidUntil = in.ValidUntil.UTC()
	} else {
		q.ValidUntil = now().Add(validity).UTC().Truncate(time.Second)
	}
	return q, nil
}

// Currency is one currency quote knows.
type Currency struct {
	Code       string `json:"code" jsonschema:"ISO 4217"`
	Name       string `json:"name"`
	MinorUnits uint8  `json:"minor_units" jsonschema:"digits after the decimal point"`
}

// currencyList is what currencies returns, in this order.
var currencyList = []Currency{
	{Code: "EUR", Name: "Euro", MinorUnits: 2},
	{Code: "JPY", Name: "Japanese yen", MinorUnits: 0},
	{Code: "USD", Name: "US dollar", MinorUnits: 2},
}

// known indexes currencyList by code.
var known = func() map[string]Currency {
	m := map[string]Currency{}
	for _, c := range currencyList {
		m[c.Code] = c
	}
	return m
}()

func currencies(ctx context.Context, _ struct{}) ([]Currency, error) { return currencyList, nil }
