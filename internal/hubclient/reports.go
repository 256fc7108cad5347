package hubclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/station-dev/station/hub"
)

// Security reports, credits, station releases and advisories
// (docs/security-reports.md; the endpoints are in docs/hub-protocol.md).

func reportPath(id string) (string, error) {
	if !hub.ValidReportID(id) {
		return "", hub.Errorf(hub.CodeInvalidName, "report id %q is not one (R- and 12 letters or digits, as `station report list` shows)", id)
	}
	return "/reports/" + id, nil
}

// FileReport files a security report. The answer is the report as the
// reporter sees it, with its id.
func (c *Client) FileReport(ctx context.Context, req hub.FileReportRequest) (hub.Report, error) {
	var out hub.Report
	err := c.do(ctx, http.MethodPost, "/reports", nil, req, &out, maxAnswer)
	return out, wrap(err, "file a report against %s", req.Target)
}

// ReportListOptions filter GET /v1/reports.
type ReportListOptions struct {
	// Target, if set, lists only the reports of this module id or
	// hub.Product.
	Target string
	// State, if set, lists only the reports in this state.
	State string
	// Mine lists only the reports the caller filed.
	Mine          bool
	Offset, Limit int
}

// Reports lists the reports the caller may read, newest first: its own,
// those of the modules it owns, all of them for an admin, and every
// published report.
func (c *Client) Reports(ctx context.Context, o ReportListOptions) (hub.ReportList, error) {
	q := url.Values{}
	if o.Target != "" {
		q.Set("target", o.Target)
	}
	if o.State != "" {
		q.Set("state", o.State)
	}
	if o.Mine {
		q.Set("mine", "true")
	}
	if o.Offset > 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out hub.ReportList
	err := c.do(ctx, http.MethodGet, "/reports", q, nil, &out, maxAnswer)
	return out, wrap(err, "list reports")
}

// Report returns a report with its thread. A report the caller may not
// read is CodeReportNotFound, exactly as one that does not exist.
func (c *Client) Report(ctx context.Context, id string) (hub.Report, error) {
	var out hub.Report
	p, err := reportPath(id)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p, nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "report %s", id)
}

// Comment adds a comment to a report's thread and returns the report.
func (c *Client) Comment(ctx context.Context, id string, req hub.CommentRequest) (hub.Report, error) {
	var out hub.Report
	p, err := reportPath(id)
	if err == nil {
		err = c.do(ctx, http.MethodPost, p+"/comments", nil, req, &out, maxAnswer)
	}
	return out, wrap(err, "comment on report %s", id)
}

// Triage changes a report's state (with what goes with the change) and
// returns the report.
func (c *Client) Triage(ctx context.Context, id string, req hub.TriageRequest) (hub.Report, error) {
	var out hub.Report
	p, err := reportPath(id)
	if err == nil {
		err = c.do(ctx, http.MethodPost, p+"/triage", nil, req, &out, maxAnswer)
	}
	return out, wrap(err, "triage report %s", id)
}

// Credits returns an account's public credit balance and history.
func (c *Client) Credits(ctx context.Context, account string) (hub.Credits, error) {
	var out hub.Credits
	if msg := hub.CheckName(account); msg != "" {
		return out, hub.Errorf(hub.CodeInvalidName, "account %q %s", account, msg)
	}
	err := c.do(ctx, http.MethodGet, "/accounts/"+url.PathEscape(account)+"/credits", nil, nil, &out, maxAnswer)
	return out, wrap(err, "credits of %s", account)
}

// HallOfFame returns the reporters by credits, highest first.
func (c *Client) HallOfFame(ctx context.Context) (hub.HallOfFame, error) {
	var out hub.HallOfFame
	err := c.do(ctx, http.MethodGet, "/credits", nil, nil, &out, maxAnswer)
	return out, wrap(err, "hall of fame")
}

// RecordRelease records a station release (admins only).
func (c *Client) RecordRelease(ctx context.Context, version string) (hub.Release, error) {
	var out hub.Release
	err := c.do(ctx, http.MethodPost, "/station/releases", nil, hub.ReleaseRequest{Version: version}, &out, maxAnswer)
	return out, wrap(err, "record station release %s", version)
}

// Releases lists the recorded station releases, highest first.
func (c *Client) Releases(ctx context.Context) ([]hub.Release, error) {
	var out hub.ReleaseList
	err := c.do(ctx, http.MethodGet, "/station/releases", nil, nil, &out, maxAnswer)
	return out.Releases, wrap(err, "list station releases")
}

// PublishAdvisory publishes an advisory written directly by the target's
// owner (for the station: an admin).
func (c *Client) PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest) (hub.OSV, error) {
	var out hub.OSV
	err := c.do(ctx, http.MethodPost, "/advisories", nil, req, &out, maxAnswer)
	return out, wrap(err, "publish an advisory for %s", req.Target)
}

func advisoryPath(id string) (string, error) {
	if !hub.ValidAdvisoryID(id) {
		return "", hub.Errorf(hub.CodeInvalidName, "advisory id %q is not one (%s-YEAR-NUMBER)", id, hub.AdvisoryPrefix)
	}
	return "/advisories/" + id, nil
}

// Advisory returns one advisory in the OSV format.
func (c *Client) Advisory(ctx context.Context, id string) (hub.OSV, error) {
	var out hub.OSV
	p, err := advisoryPath(id)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p, nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "advisory %s", id)
}

// WithdrawAdvisory withdraws an advisory (the target's owner, or an admin):
// stations stop applying it.
func (c *Client) WithdrawAdvisory(ctx context.Context, id, reason string) (hub.OSV, error) {
	var out hub.OSV
	p, err := advisoryPath(id)
	if err == nil {
		err = c.do(ctx, http.MethodPost, p+"/withdraw", nil, hub.WithdrawRequest{Reason: reason}, &out, maxAnswer)
	}
	return out, wrap(err, "withdraw advisory %s", id)
}

// Advisories returns every advisory of a target (module id or
// hub.Product), withdrawn ones included.
func (c *Client) Advisories(ctx context.Context, target string) ([]hub.OSV, error) {
	var out hub.AdvisoryList
	err := c.do(ctx, http.MethodGet, "/advisories", url.Values{"target": {target}}, nil, &out, maxAnswer)
	return out.Advisories, wrap(err, "advisories of %s", target)
}

// AdvisoryFeed returns the advisories and yanks that changed after cursor
// (0: all of them), at most limit of each kind (0: the hub's default).
func (c *Client) AdvisoryFeed(ctx context.Context, cursor int64, limit int) (hub.AdvisoryFeed, error) {
	q := url.Values{"after": {strconv.FormatInt(cursor, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out hub.AdvisoryFeed
	err := c.do(ctx, http.MethodGet, "/advisories/feed", q, nil, &out, maxAnswer)
	return out, wrap(err, "read the advisory feed")
}
