package llm

import (
	"context"
	"net/http"
	"time"
)

// SetSleep replaces the wait between attempts of c.
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }

// Backoff exposes the wait before attempt+1.
func Backoff(c *Client, attempt int, retryAfterHeader time.Duration) time.Duration {
	return c.backoff(attempt, retryAfterHeader)
}

// RetryAfter exposes the header parser.
func RetryAfter(h http.Header, now time.Time) time.Duration { return retryAfter(h, now) }
