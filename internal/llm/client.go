package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/stationhttp"
)

// Defaults for the zero values of Config.
const (
	// DefaultMaxRetries is the retry count the station's configuration
	// uses when it sets none (Config.MaxRetries 0 means no retries).
	DefaultMaxRetries = 2
	// DefaultTimeout is the per-attempt timeout the station's
	// configuration uses when it sets none.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxResponse bounds the provider's answer to one request.
	DefaultMaxResponse = 4 << 20
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait between
	// attempts when the provider does not say how long to wait.
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 8 * time.Second
	// MaxRetryAfter is the longest Retry-After the client waits for; a
	// provider that asks for longer gets an error instead of a stalled
	// call.
	MaxRetryAfter = 60 * time.Second
)

// Config configures a Client. The zero value is an unconfigured client:
// every Complete fails with an error that says what to set.
type Config struct {
	// BaseURL is the API root; the client POSTs to BaseURL +
	// "/chat/completions". For example "https://api.openai.com/v1" or
	// "https://api.groq.com/openai/v1".
	BaseURL string
	// Model is the model of requests that name none.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>". It never appears in
	// an error, a log line or a returned value. It may be empty only for a
	// server on a loopback address (a local model server).
	APIKey string
	// KeyEnv says where the key comes from, for error messages, e.g.
	// "GROQ_API_KEY (llm.api_key_env) or STATION_LLM_API_KEY". It is a
	// name, never the key.
	KeyEnv string
	// Timeout bounds each attempt; 0 leaves it to the caller's context and
	// the HTTP client.
	Timeout time.Duration
	// MaxRetries is how often a failed attempt is retried: 408, 409, 429,
	// 5xx answers and connection errors. 0 means no retries.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults DefaultMinBackoff, DefaultMaxBackoff). A
	// Retry-After header replaces the computed wait.
	MinBackoff, MaxBackoff time.Duration
	// MaxResponse bounds the size of the provider's answer in bytes
	// (default DefaultMaxResponse).
	MaxResponse int64
}

// Client is an OpenAI-compatible chat-completions client. It is safe for
// concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	host     string // the provider's host, for messages
	hc       *http.Client
	cfgErr   error // why the client cannot make requests, or nil
	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ Completer = (*Client)(nil)

// New returns a client for cfg that sends its requests with hc (nil: a
// client with default settings). Use a station-level client
// (stationhttp.NewClient): no module's policy applies to the LLM provider.
// New does not fail: a configuration the client cannot use makes every
// Complete fail with the reason, and Check reports it up front.
func New(cfg Config, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	// Never follow a redirect: the key must go only to the configured
	// endpoint, and a redirect is a configuration mistake to report.
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{cfg: cfg, hc: &noRedirect, sleep: sleepCtx}
	if c.cfg.MinBackoff <= 0 {
		c.cfg.MinBackoff = DefaultMinBackoff
	}
	if c.cfg.MaxBackoff <= 0 {
		c.cfg.MaxBackoff = DefaultMaxBackoff
	}
	if c.cfg.MaxResponse <= 0 {
		c.cfg.MaxResponse = DefaultMaxResponse
	}
	c.cfg.MaxRetries = max(c.cfg.MaxRetries, 0)
	c.endpoint, c.host, c.cfgErr = c.check()
	return c
}

// Model returns the model requests without one use.
func (c *Client) Model() string { return c.cfg.Model }

// Check reports why the client cannot make requests (no base URL, no key),
// or nil. It does not contact the provider.
func (c *Client) Check() error { return c.cfgErr }

func (c *Client) check() (endpoint, host string, err error) {
	fail := func(msg string) (string, string, error) {
		return "", "", &Error{Kind: ErrNotConfigured, Msg: "llm: " + msg}
	}
	if c.cfg.BaseURL == "" {
		return fail("no provider is configured: set llm.provider or llm.base_url in the station's config.yaml, or STATION_LLM_BASE_URL")
	}
	u, err := url.Parse(c.cfg.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fail(fmt.Sprintf("base URL %q is not an http(s) URL without credentials, query or fragment", sandbox.Sanitize(redactURL(c.cfg.BaseURL))))
	}
	loopback := stationhttp.IsLoopback(u.Hostname())
	if u.Scheme == "http" && !loopback {
		return fail(fmt.Sprintf("base URL %s uses plain http: the key would travel unencrypted; use https (http is accepted only for a server on this machine)", u.Redacted()))
	}
	if c.cfg.APIKey == "" && !loopback {
		where := c.cfg.KeyEnv
		if where == "" {
			where = "STATION_LLM_API_KEY"
		}
		return fail("no API key is configured: set " + where)
	}
	for i := 0; i < len(c.cfg.APIKey); i++ {
		if b := c.cfg.APIKey[i]; b < 0x21 || b > 0x7e {
			return fail("the API key in " + cmp.Or(c.cfg.KeyEnv, "the configuration") + " contains a character that cannot be sent in a header (a space or line break?)")
		}
	}
	return strings.TrimSuffix(u.String(), "/") + "/chat/completions", u.Host, nil
}

// The kinds of Error; errors.Is(err, llm.ErrRateLimited) tells them apart.
var (
	// ErrNotConfigured: the station has no usable provider settings.
	ErrNotConfigured = errors.New("llm not configured")
	// ErrInvalid: the request is malformed (no messages, no model).
	ErrInvalid = errors.New("invalid llm request")
	// ErrKeyRefused: the provider refused the key (401, 403).
	ErrKeyRefused = errors.New("the provider refused the key")
	// ErrModelNotFound: the provider has no such model for this key.
	ErrModelNotFound = errors.New("model not found")
	// ErrRateLimited: the provider is rate limiting, or the account is out
	// of quota (429).
	ErrRateLimited = errors.New("rate limited by the provider")
	// ErrBadRequest: the provider refused the request (400, 422).
	ErrBadRequest = errors.New("the provider refused the request")
	// ErrUnavailable: the provider could not be reached or failed (5xx,
	// connection errors, timeouts of an attempt).
	ErrUnavailable = errors.New("the provider is unavailable")
	// ErrBadResponse: the provider's answer is not a chat completion, or
	// is too large.
	ErrBadResponse = errors.New("bad response from the provider")
)

// Error is a failed completion. Its message says what failed and what to
// do, and never contains the key. errors.Is matches Kind (one of the Err*
// values) and, for a call that ran out of time, the context's error.
type Error struct {
	Kind error
	// Status is the provider's HTTP status, 0 when there was no answer.
	Status int
	// Attempts is how many requests were made.
	Attempts int
	Msg      string
	cause    error // context.Canceled or DeadlineExceeded, for errors.Is
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind and, for a call that ran out of time, the
// context's error.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Kind, e.cause}
	}
	return []error{e.Kind}
}

// wire types of the chat-completions API.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

type apiError struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// Complete sends one chat completion, retrying as Config says. The
// caller's context bounds the whole call, retries and waits included.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	if c.cfgErr != nil {
		return nil, c.cfgErr
	}
	model := cmp.Or(req.Model, c.cfg.Model)
	if model == "" {
		return nil, &Error{Kind: ErrNotConfigured, Msg: "llm: no model is configured: set llm.model in the station's config.yaml or STATION_LLM_MODEL"}
	}
	if len(req.Messages) == 0 {
		return nil, &Error{Kind: ErrInvalid, Msg: "llm: the request has no messages"}
	}
	if req.MaxTokens < 0 {
		return nil, &Error{Kind: ErrInvalid, Msg: "llm: max_tokens is negative"}
	}
	wire := chatRequest{Model: model, Messages: req.Messages, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if req.JSON {
		wire.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, Msg: "llm: encode the request: " + err.Error()}
	}
	for attempt := 1; ; attempt++ {
		resp, failure := c.attempt(ctx, body, model)
		if failure == nil {
			return resp, nil
		}
		e := failure.err
		e.Attempts = attempt
		if !failure.retry || attempt > c.cfg.MaxRetries {
			if failure.retry && c.cfg.MaxRetries > 0 {
				e.Msg += fmt.Sprintf(" (gave up after %d attempts)", attempt)
			}
			return nil, e
		}
		wait := c.backoff(attempt, failure.retryAfter)
		if failure.retryAfter > MaxRetryAfter {
			e.Msg += fmt.Sprintf(" (the provider asks to wait %s, longer than the station waits)", failure.retryAfter.Round(time.Second))
			return nil, e
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			e.Msg += fmt.Sprintf(" (no time left in the call's deadline to retry after %s)", wait.Round(time.Millisecond))
			return nil, e
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, c.ctxError(ctx, model, attempt)
		}
	}
}

// failure is a failed attempt and whether (and when) to retry it.
type failure struct {
	err        *Error
	retry      bool
	retryAfter time.Duration // 0: the provider did not say
}

func (c *Client) attempt(ctx context.Context, body []byte, model string) (*Response, *failure) {
	actx := ctx
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &failure{err: &Error{Kind: ErrNotConfigured, Msg: "llm: build the request: " + err.Error()}}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &failure{err: c.ctxError(ctx, model, 0)}
		}
		msg := fmt.Sprintf("llm: cannot reach the provider at %s: %s", c.host, c.redact(transportCause(err)))
		if actx.Err() != nil {
			msg = fmt.Sprintf("llm: the provider at %s did not answer within %s (llm.timeout)", c.host, c.cfg.Timeout)
		}
		return nil, &failure{err: &Error{Kind: ErrUnavailable, Msg: msg}, retry: true}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, &failure{err: c.ctxError(ctx, model, 0)}
		}
		return nil, &failure{err: &Error{Kind: ErrUnavailable, Status: resp.StatusCode, Msg: fmt.Sprintf("llm: read the answer of the provider at %s: %s", c.host, c.redact(transportCause(err)))}, retry: true}
	}
	if int64(len(raw)) > c.cfg.MaxResponse {
		return nil, &failure{err: &Error{Kind: ErrBadResponse, Status: resp.StatusCode, Msg: fmt.Sprintf("llm: the provider's answer is larger than %d bytes", c.cfg.MaxResponse)}}
	}
	if resp.StatusCode == http.StatusOK {
		out, err := decodeCompletion(raw, model)
		if err != nil {
			return nil, &failure{err: &Error{Kind: ErrBadResponse, Status: resp.StatusCode, Msg: fmt.Sprintf("llm: the answer of the provider at %s is not a chat completion: %s", c.host, c.redact(err.Error()))}}
		}
		return out, nil
	}
	return nil, c.statusFailure(resp, raw, model)
}

func decodeCompletion(raw []byte, model string) (*Response, error) {
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return nil, err
	}
	if len(cr.Choices) == 0 {
		return nil, errors.New("it has no choices")
	}
	ch := cr.Choices[0]
	out := &Response{Model: cmp.Or(cr.Model, model), FinishReason: ch.FinishReason}
	if ch.Message.Content != nil {
		out.Content = *ch.Message.Content
	}
	if u := cr.Usage; u != nil {
		if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
			return nil, errors.New("it reports negative token usage")
		}
		out.Usage = *u
		if out.Usage.TotalTokens == 0 {
			out.Usage.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
	}
	return out, nil
}

// statusFailure classifies a non-200 answer.
func (c *Client) statusFailure(resp *http.Response, raw []byte, model string) *failure {
	code := resp.StatusCode
	var ae apiError
	_ = json.Unmarshal(raw, &ae)
	errCode := ""
	if len(ae.Error.Code) > 0 {
		if json.Unmarshal(ae.Error.Code, &errCode) != nil {
			errCode = strings.Trim(string(ae.Error.Code), `"`)
		}
	}
	detail := c.providerText(ae.Error.Message, raw)
	status := fmt.Sprintf("HTTP %d", code)
	f := &failure{err: &Error{Status: code}}
	set := func(kind error, msg string) {
		f.err.Kind, f.err.Msg = kind, "llm: "+msg
	}
	switch {
	case code == http.StatusUnauthorized:
		// The provider's text is left out: providers quote (part of) the
		// key they refused.
		set(ErrKeyRefused, fmt.Sprintf("the provider at %s refused the key (%s): check the key in %s, and that it belongs to this provider", c.host, status, cmp.Or(c.cfg.KeyEnv, "the configuration")))
	case code == http.StatusForbidden:
		set(ErrKeyRefused, fmt.Sprintf("the provider at %s refused the key (%s)%s: check that the key in %s may use model %q", c.host, status, withDetail(detail), cmp.Or(c.cfg.KeyEnv, "the configuration"), model))
	case errCode == "model_not_found" || errCode == "model_decommissioned" || (code == http.StatusNotFound && strings.Contains(strings.ToLower(detail), "model")):
		set(ErrModelNotFound, fmt.Sprintf("the provider at %s has no model %q for this key (%s)%s: set llm.model in the station's config.yaml or STATION_LLM_MODEL to a model it offers", c.host, model, status, withDetail(detail)))
	case code == http.StatusNotFound:
		set(ErrNotConfigured, fmt.Sprintf("the provider at %s has no chat-completions endpoint at %s (%s): check llm.base_url (it usually ends in /v1)", c.host, c.endpointPath(), status))
	case code == http.StatusTooManyRequests && errCode == "insufficient_quota":
		set(ErrRateLimited, fmt.Sprintf("the provider at %s says the account is out of quota (%s)%s", c.host, status, withDetail(detail)))
	case code == http.StatusTooManyRequests:
		set(ErrRateLimited, fmt.Sprintf("the provider at %s is rate limiting requests (%s)%s", c.host, status, withDetail(detail)))
		f.retry = true
	case code == http.StatusRequestTimeout || code == http.StatusConflict || code >= 500:
		set(ErrUnavailable, fmt.Sprintf("the provider at %s failed (%s)%s", c.host, status, withDetail(detail)))
		f.retry = true
	case code >= 300 && code < 400:
		set(ErrNotConfigured, fmt.Sprintf("the provider at %s answered with a redirect (%s) to %s: set llm.base_url to the address it should be", c.host, status, c.redact(sandbox.Sanitize(redactURL(resp.Header.Get("Location"))))))
	default:
		set(ErrBadRequest, fmt.Sprintf("the provider at %s refused the request for model %q (%s)%s", c.host, model, status, withDetail(detail)))
	}
	// x-should-retry is OpenAI's explicit override of the default.
	switch resp.Header.Get("X-Should-Retry") {
	case "true":
		f.retry = true
	case "false":
		f.retry = false
	}
	if f.retry {
		f.retryAfter = retryAfter(resp.Header, time.Now())
	}
	return f
}

func withDetail(d string) string {
	if d == "" {
		return ""
	}
	return ": " + d
}

func (c *Client) endpointPath() string {
	if u, err := url.Parse(c.endpoint); err == nil {
		return u.Path
	}
	return "/chat/completions"
}

// maxDetail bounds the provider's text quoted in an error.
const maxDetail = 300

// providerText returns the provider's error message (or, without one, the
// start of its body), redacted, sanitized and bounded.
func (c *Client) providerText(msg string, raw []byte) string {
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
		if strings.HasPrefix(msg, "<") { // an HTML error page says nothing useful
			return ""
		}
	}
	return sandbox.SanitizeLimit(c.redact(msg), maxDetail)
}

// redact removes the key from s. Messages are built from the provider's
// text and transport errors, and the key must never reach a log, the audit
// log or a module.
func (c *Client) redact(s string) string {
	if k := c.cfg.APIKey; k != "" {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

func (c *Client) ctxError(ctx context.Context, model string, attempts int) *Error {
	err := ctx.Err()
	msg := fmt.Sprintf("llm: completion with model %q was canceled", model)
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("llm: completion with model %q did not finish within the call's deadline", model)
	}
	return &Error{Kind: ErrUnavailable, Attempts: attempts, Msg: msg, cause: err}
}

// backoff is the wait before attempt+1: the provider's Retry-After when it
// sent one, otherwise exponential from MinBackoff, capped at MaxBackoff,
// with jitter in its upper half.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := c.cfg.MinBackoff
	for i := 1; i < attempt && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms some providers send; 0 when neither is usable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// transportCause describes a transport error without the URL (net/http
// quotes it, and a URL can carry what the operator would not print).
func transportCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return err.Error()
}

// redactURL drops userinfo and query from a URL for a message.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
