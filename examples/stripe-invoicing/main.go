// Command stripe-invoicing is an example Station module that creates Stripe
// invoices and summarizes text with an LLM, confined by its manifest to
// api.stripe.com and api.groq.com. It never sees its API keys: it writes
// the placeholders of the secrets STRIPE_KEY and GROQ_KEY (sdk.Secret), and
// the station puts the values the operator stored (station secret set) in
// only in requests to api.stripe.com and api.groq.com respectively. Its
// fetch command requests any URL, to show what a denial looks like. Build
// it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o module.wasm .
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/shttp"
)

func init() {
	sdk.Handle("create-invoice", createInvoice)
	sdk.Handle("summarize", summarize)
	sdk.Handle("fetch", fetch)
}

func main() {}

// client sends every request through the station's network gate.
var client = shttp.Client()

// maxReply bounds how much of a reply the module reads.
const maxReply = 1 << 20

// InvoiceInput is the input of create-invoice.
type InvoiceInput struct {
	Customer string `json:"customer"` // a Stripe customer id, cus_...
}

// Invoice is the result of create-invoice.
type Invoice struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	AmountDue int64  `json:"amount_due"`
	Currency  string `json:"currency"`
}

func createInvoice(ctx context.Context, in InvoiceInput) (Invoice, error) {
	if in.Customer == "" {
		return Invoice{}, errors.New("customer is required")
	}
	form := url.Values{"customer": {in.Customer}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.stripe.com/v1/invoices", strings.NewReader(form.Encode()))
	if err != nil {
		return Invoice{}, err
	}
	req.Header.Set("Authorization", "Bearer "+sdk.Secret("STRIPE_KEY"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var inv Invoice
	if err := do(req, &inv); err != nil {
		return Invoice{}, err
	}
	sdk.Logger().Info("invoice created", "id", inv.ID, "status", inv.Status)
	return inv, nil
}

// SummarizeInput is the input of summarize.
type SummarizeInput struct {
	Text  string `json:"text"`            // what to summarize
	Model string `json:"model,omitempty"` // default llama-3.1-8b-instant
}

// Summary is the result of summarize.
type Summary struct {
	Summary string `json:"summary"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func summarize(ctx context.Context, in SummarizeInput) (Summary, error) {
	if strings.TrimSpace(in.Text) == "" {
		return Summary{}, errors.New("text is required")
	}
	model := in.Model
	if model == "" {
		model = "llama-3.1-8b-instant"
	}
	body, err := json.Marshal(map[string]any{
		"model": model,
		"messages": []chatMessage{
			{Role: "system", Content: "Summarize the user's text in two sentences."},
			{Role: "user", Content: in.Text},
		},
	})
	if err != nil {
		return Summary{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.groq.com/openai/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Summary{}, err
	}
	req.Header.Set("Authorization", "Bearer "+sdk.Secret("GROQ_KEY"))
	req.Header.Set("Content-Type", "application/json")
	var reply struct {
		Choices []struct {
			Message chatMessage `json:"message"`
		} `json:"choices"`
	}
	if err := do(req, &reply); err != nil {
		return Summary{}, err
	}
	if len(reply.Choices) == 0 {
		return Summary{}, errors.New("the model returned no choices")
	}
	return Summary{Summary: strings.TrimSpace(reply.Choices[0].Message.Content)}, nil
}

// FetchInput is the input of fetch.
type FetchInput struct {
	URL string `json:"url"`
}

// FetchResult is the result of fetch.
type FetchResult struct {
	Status int    `json:"status"`
	URL    string `json:"url"` // after the redirects the station followed
	Bytes  int    `json:"bytes"`
}

func fetch(ctx context.Context, in FetchInput) (FetchResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL, nil)
	if err != nil {
		return FetchResult{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return FetchResult{}, explain(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return FetchResult{}, err
	}
	return FetchResult{Status: resp.StatusCode, URL: resp.Request.URL.String(), Bytes: int(n)}, nil
}

// do sends req and decodes a 2xx JSON reply into v. Other replies become
// errors carrying the API's own message.
func do(req *http.Request, v any) error {
	resp, err := client.Do(req)
	if err != nil {
		return explain(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var apiErr struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &apiErr) == nil && apiErr.Error.Message != "" {
			return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Host, resp.Status, apiErr.Error.Message)
		}
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Host, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s %s: decode the reply: %w", req.Method, req.URL.Host, err)
	}
	return nil
}

// explain makes a denial by the station's sandbox read as one, keeping the
// *sdk.HostError in the chain for callers that inspect it.
func explain(err error) error {
	var he *sdk.HostError
	if errors.As(err, &he) && he.Denied() {
		return fmt.Errorf("the station refused the request (this module may only reach api.stripe.com and api.groq.com): %w", he)
	}
	return err
}
