package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/ui"
	"github.com/station-dev/station/internal/workflow"
)

// sameOrigin are the headers a browser sends with a form of the
// dashboard's own page.
func (u *testUI) fromDashboard() map[string]string {
	return map[string]string{"Origin": u.base, "Sec-Fetch-Site": "same-origin"}
}

// recordRun records a finished run of workflow name with steps, as the
// engine would: each step one attempt per entry of fails (an error, "" for
// success), the run status at the end. The attempts' traces are
// workflow.Trace's.
func recordRun(t *testing.T, st *store.Store, name string, status store.RunStatus, steps []string, fails map[string][]string, at time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	const owner = "test-owner"
	var decl []store.NewWorkflowStep
	for _, s := range steps {
		decl = append(decl, store.NewWorkflowStep{Step: s, Uses: probeID + " " + probe.Command})
	}
	id, err := st.CreateWorkflowRun(ctx, store.NewWorkflowRun{Workflow: name, File: "/work/flows/" + name + ".yaml", Digest: "sha256:abc",
		Inputs: []byte(`{"customer":"ada"}`), Owner: owner, Steps: decl, At: at})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		tries := fails[s]
		if len(tries) == 0 {
			tries = []string{""}
		}
		for n, e := range tries {
			start := at.Add(time.Duration(i+1)*time.Second + time.Duration(n)*100*time.Millisecond)
			if err := st.StartStepAttempt(ctx, store.AttemptStart{RunID: id, Owner: owner, Step: s, Attempt: n + 1, Trace: workflow.Trace(id, s, n+1), Input: []byte(`{"n":1}`), At: start}); err != nil {
				t.Fatal(err)
			}
			end := store.AttemptEnd{RunID: id, Owner: owner, Step: s, Attempt: n + 1, Err: e, Final: n == len(tries)-1, At: start.Add(50 * time.Millisecond)}
			if e != "" {
				end.ErrKind = "violation"
			} else {
				end.Output = []byte(`{"ok":true}`)
			}
			if err := st.FinishStepAttempt(ctx, end); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out []byte
	var msg string
	if status == store.RunSucceeded {
		out = []byte(`{"done":true}`)
	} else {
		msg = "step failed"
	}
	if err := st.FinishWorkflowRun(ctx, id, owner, status, out, msg, at.Add(time.Duration(len(steps)+1)*time.Second)); err != nil {
		t.Fatal(err)
	}
	return id
}

// noMarkup fails if page prints hostile text as markup, or does not
// show it at all.
func noMarkup(t *testing.T, what, page string) {
	t.Helper()
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") {
		t.Errorf("%s prints module text as markup:\n%s", what, page)
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("%s does not show the hostile text, escaped:\n%s", what, page)
	}
}

// TestRunsPages: the Runs page lists the runs, newest first, with a link
// to each; a run's page is its steps in order, each with its attempts and
// their sandbox decisions, and every string a module or the workflow file
// supplied is text, not markup; bad ids are 404; a run that is not
// interrupted or failed is not resumed, and no run is without the CSRF
// token.
func TestRunsPages(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UTC()
	ok := recordRun(t, u.st.Store, "invoice", store.RunSucceeded, []string{"step-alpha", hostile, "step-omega"},
		map[string][]string{hostile: {hostile, ""}}, at)
	failed := recordRun(t, u.st.Store, hostile, store.RunFailed, []string{"only"}, map[string][]string{"only": {"it broke"}}, at.Add(time.Minute))
	// The attempts' decisions, one with a hostile target.
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{
		{Time: at, Module: probeID, Command: probe.Command, Capability: sandbox.Network, Target: "https://evil.example/" + hostile, Reason: "not in requires.network", Trace: workflow.Trace(ok, hostile, 1)},
		{Time: at, Module: probeID, Command: probe.Command, Capability: sandbox.Network, Target: "api.stripe.com", Allowed: true, Reason: "in requires.network", Trace: workflow.Trace(ok, hostile, 2)},
		{Time: at, Module: probeID, Command: probe.Command, Capability: sandbox.Network, Target: "alpha.example", Allowed: true, Trace: workflow.Trace(ok, "step-alpha", 1)},
	}); err != nil {
		t.Fatal(err)
	}
	c, csrf := u.signedIn(t)

	resp, body := u.get(t, c, "/ui/runs")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("runs: %s\n%s", resp.Status, body)
	}
	for _, want := range []string{fmt.Sprintf(`href="/ui/runs/%d"`, ok), fmt.Sprintf(`href="/ui/runs/%d"`, failed), ">invoice<",
		`<span class="badge ok">succeeded</span>`, `<span class="badge bad">failed</span>`, "/work/flows/invoice.yaml", "<td>4s</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("runs page lacks %q:\n%s", want, body)
		}
	}
	if strings.Index(body, fmt.Sprintf(`href="/ui/runs/%d"`, failed)) > strings.Index(body, fmt.Sprintf(`href="/ui/runs/%d"`, ok)) {
		t.Errorf("runs page: not newest first:\n%s", body)
	}
	noMarkup(t, "runs page", body)

	resp, body = u.get(t, c, fmt.Sprintf("/ui/runs/%d", ok))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run: %s\n%s", resp.Status, body)
	}
	noMarkup(t, "run page", body)
	// The steps, in order, each an entry of the timeline with its status.
	alpha := strings.Index(body, "<h3>step-alpha ")
	mid := strings.Index(body, "<h3>&lt;script&gt;alert(1)")
	omega := strings.Index(body, "<h3>step-omega ")
	if alpha < 0 || mid < alpha || omega < mid {
		t.Errorf("steps not in order (%d %d %d):\n%s", alpha, mid, omega, body)
	}
	if n := strings.Count(body, `<li class="succeeded">`); n != 3 || !strings.Contains(body, `<ol class="timeline">`) {
		t.Errorf("timeline: %d succeeded steps, want 3:\n%s", n, body)
	}
	// The hostile step's two attempts, the first failed with its error and
	// its denial, the second with its allowed call.
	step := body[mid:omega]
	for _, want := range []string{"Attempt 1: ", `<span class="badge bad">failed</span>`, "(violation)", `<span class="fail">&lt;script&gt;alert(1)`,
		"Attempt 2: ", `<span class="badge ok">succeeded</span>`, "2 attempts",
		`<td class="target mono">https://evil.example/&lt;script&gt;`, `<span class="badge bad">denied</span>`,
		`<td class="target mono">api.stripe.com</td>`, `<span class="badge ok">allowed</span>`,
		fmt.Sprintf(`href="/ui/audit?trace=run%%2f%d%%2fstep%%2f%%3cscript%%3ealert`, ok), // the attempt's decisions in the log
		"<summary>Input</summary><pre>{\n  &#34;n&#34;: 1\n}</pre>", "<summary>Output</summary>",
		`<svg class="span"`, `<rect class="took" x="`} {
		if !strings.Contains(step, want) {
			t.Errorf("the hostile step lacks %q:\n%s", want, step)
		}
	}
	if i, j := strings.Index(step, "Attempt 1"), strings.Index(step, "https://evil.example/"); j < i || j > strings.Index(step, "Attempt 2") {
		t.Errorf("the denial is not under attempt 1:\n%s", step)
	}
	if !strings.Contains(body[alpha:mid], "alpha.example") || strings.Contains(body[omega:], "alpha.example") {
		t.Errorf("step-alpha's decision is not under step-alpha:\n%s", body)
	}
	// The bar: 1 s into a 4 s run; each step 50 ms of it (at least 1%).
	if !strings.Contains(body[alpha:mid], `x="25" width="1"`) {
		t.Errorf("step-alpha's bar is not at 25%%, 1%% wide:\n%s", body[alpha:mid])
	}
	for _, want := range []string{"<pre>{\n  &#34;customer&#34;: &#34;ada&#34;\n}</pre>", "<h2 id=\"out-h\">Output</h2>", "Took</dt><dd>4s</dd>"} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "/resume") {
		t.Errorf("a succeeded run offers a resume:\n%s", body)
	}
	// A failed run offers one, with the page's token.
	_, body = u.get(t, c, fmt.Sprintf("/ui/runs/%d", failed))
	noMarkup(t, "failed run page", body)
	if !strings.Contains(body, fmt.Sprintf(`action="/ui/runs/%d/resume"`, failed)) || !strings.Contains(body, `name="csrf" value="`+csrf+`"`) ||
		!strings.Contains(body, `<li class="failed">`) || !strings.Contains(body, `<p class="error">step failed</p>`) {
		t.Errorf("failed run page:\n%s", body)
	}

	for _, p := range []string{"/ui/runs/9999", "/ui/runs/abc", "/ui/runs/0", "/ui/runs/-1"} {
		resp, body := u.get(t, c, p)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "the Runs page lists them") {
			t.Errorf("GET %s: %s, want 404 saying so\n%s", p, resp.Status, body)
		}
	}

	// Resume: refused for a succeeded run (409), without the token (403),
	// for a run that does not exist (404); none of it resumes anything.
	resp, body = u.post(t, c, fmt.Sprintf("/ui/runs/%d/resume", ok), url.Values{"csrf": {csrf}}, u.fromDashboard())
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, fmt.Sprintf("Run %d is succeeded: only an interrupted or failed run can be resumed.", ok)) {
		t.Errorf("resume a succeeded run: %s, want 409\n%s", resp.Status, body)
	}
	if resp, body := u.post(t, c, fmt.Sprintf("/ui/runs/%d/resume", failed), url.Values{}, u.fromDashboard()); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("resume without the token: %s, want 403\n%s", resp.Status, body)
	}
	if resp, _ := u.post(t, c, "/ui/runs/9999/resume", url.Values{"csrf": {csrf}}, u.fromDashboard()); resp.StatusCode != http.StatusNotFound {
		t.Errorf("resume run 9999: %s, want 404", resp.Status)
	}
	for _, id := range []int64{ok, failed} {
		run, err := u.st.Store.WorkflowRun(ctx, id)
		if err != nil || run.Resumes != 0 || run.Owner != "test-owner" {
			t.Errorf("run %d after the refusals: %+v, %v", id, run, err)
		}
	}
}

// TestResumeRun: an interrupted run's Resume goes through the same service
// as station workflow resume, in the background: the answer is a redirect
// to the run with a flash, and the run goes on to its end after it. A run
// the service refuses (its file changed) is shown the refusal, 409.
func TestResumeRun(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "ping.yaml")
	src := "name: ping\nsteps:\n  - id: ping\n    uses: " + probeID + " " + probe.Command + "\n    with: {actions: [{op: http, method: GET, url: \"https://evil.example/x\"}]}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	interrupted := func(digest string) int64 {
		t.Helper()
		id, err := u.st.Store.CreateWorkflowRun(ctx, store.NewWorkflowRun{Workflow: wf.Name, File: wf.File, Digest: digest, Inputs: []byte(`{}`), Owner: "gone",
			Steps: []store.NewWorkflowStep{{Step: "ping", Uses: probeID + " " + probe.Command}}, At: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if err := u.st.Store.FinishWorkflowRun(ctx, id, "gone", store.RunInterrupted, nil, "the station stopped during the run", time.Now()); err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := interrupted(wf.Digest)
	changed := interrupted("sha256:another")
	c, csrf := u.signedIn(t)
	page := fmt.Sprintf("/ui/runs/%d", id)
	_, body := u.get(t, c, page)
	if !strings.Contains(body, fmt.Sprintf(`action="/ui/runs/%d/resume"`, id)) || !strings.Contains(body, `<span class="badge warn">interrupted</span>`) {
		t.Fatalf("interrupted run page:\n%s", body)
	}

	resp, body := u.post(t, c, page+"/resume", url.Values{"csrf": {csrf}}, u.fromDashboard())
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != page {
		t.Fatalf("resume: %s to %q\n%s", resp.Status, resp.Header.Get("Location"), body)
	}
	var run store.WorkflowRun
	fixture.Eventuallyf(t, 30*time.Second, func() bool {
		run, err = u.st.Store.WorkflowRun(ctx, id)
		return err == nil && run.Status != store.RunRunning
	}, "the resumed run to end")
	if run.Status != store.RunSucceeded || run.Resumes != 1 {
		t.Fatalf("resumed run: %+v", run)
	}
	resp, body = u.get(t, c, resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`<p class="flash" role="status">resuming run %d</p>`, id)) ||
		!strings.Contains(body, `<span class="badge ok">succeeded</span>`) || !strings.Contains(body, "Resumed</dt><dd>1 time</dd>") ||
		!strings.Contains(body, `<td class="target mono">evil.example`) {
		t.Errorf("the resumed run's page: %s\n%s", resp.Status, body)
	}
	// Once it succeeded, it is not resumed again.
	if resp, _ := u.post(t, c, page+"/resume", url.Values{"csrf": {csrf}}, u.fromDashboard()); resp.StatusCode != http.StatusConflict {
		t.Errorf("resume a succeeded run: %s, want 409", resp.Status)
	}

	resp, body = u.post(t, c, fmt.Sprintf("/ui/runs/%d/resume", changed), url.Values{"csrf": {csrf}}, u.fromDashboard())
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "changed since the run started") {
		t.Errorf("resume a run whose file changed: %s, want 409\n%s", resp.Status, body)
	}
	if run, err := u.st.Store.WorkflowRun(ctx, changed); err != nil || run.Status != store.RunInterrupted || run.Resumes != 0 {
		t.Errorf("the refused run: %+v, %v", run, err)
	}
}

// TestRunsWithoutWorkflows: a daemon that serves no workflow engine says
// so, and has no run to show or resume.
func TestRunsWithoutWorkflows(t *testing.T) {
	u := newUI(t, func(o *ui.Options) { o.Workflows = nil })
	c, csrf := u.signedIn(t)
	if resp, body := u.get(t, c, "/ui/runs"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "does not serve workflows") {
		t.Errorf("runs: %s\n%s", resp.Status, body)
	}
	if resp, _ := u.get(t, c, "/ui/runs/1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("run 1: %s", resp.Status)
	}
	if resp, _ := u.post(t, c, "/ui/runs/1/resume", url.Values{"csrf": {csrf}}, u.fromDashboard()); resp.StatusCode != http.StatusNotFound {
		t.Errorf("resume run 1: %s", resp.Status)
	}
}

// llmModule is a module newUI's station has, installed by TestLLMPage,
// granted the station's LLM with a budget.
const llmModule = "test/llm"

// tableRow returns the row of the table with id whose header cell
// contains key, on one line, or "".
func tableRow(page, id, key string) string {
	i := strings.Index(page, `<table id="`+id+`">`)
	if i < 0 {
		return ""
	}
	table := page[i:]
	table = table[:strings.Index(table, "</table>")]
	for _, row := range regexp.MustCompile(`(?s)<tr[ >].*?</tr>`).FindAllString(table, -1) {
		if th := regexp.MustCompile(`(?s)<th scope="row">.*?</th>`).FindString(row); strings.Contains(th, key) {
			return strings.ReplaceAll(row, "\n", "")
		}
	}
	return ""
}

// TestLLMPage: the LLM page shows, per module, the last 24 hours as
// station llm usage does against the module's budget and the last 14
// days, and a chart of them with the budget line and the days over it;
// per workflow, what its runs spent; module ids are text.
func TestLLMPage(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	// A module granted the LLM with a budget of 1000 tokens a day.
	dir := t.TempDir()
	m := "id: " + llmModule + "\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: run\nrequires:\n  llm: {budget_tokens_per_day: 1000}\n"
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := u.st.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	// The dashboard's clock at noon UTC, so that "an hour ago" is today.
	noon := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	u.mu.Lock()
	u.now = noon
	u.mu.Unlock()

	run := recordRun(t, u.st.Store, "digest", store.RunSucceeded, []string{"note"}, nil, noon.Add(-3*time.Hour))
	trace := workflow.Trace(run, "note", 1)
	for _, r := range []store.LLMRecord{
		{Time: noon.Add(-time.Hour), Module: llmModule, Trace: trace, Model: "m", PromptTokens: 1000, CompletionTokens: 500},
		{Time: noon.Add(-3 * 24 * time.Hour), Module: llmModule, Model: "m", PromptTokens: 150, CompletionTokens: 50},
		{Time: noon.Add(-20 * 24 * time.Hour), Module: llmModule, Model: "m", PromptTokens: 99999}, // before the chart
		{Time: noon.Add(-2 * time.Hour), Module: "", Trace: trace, Model: "m", PromptTokens: 30, CompletionTokens: 12},
		{Time: noon.Add(-2 * 24 * time.Hour), Module: hostile, Model: "m", PromptTokens: 5}, // removed since
	} {
		if err := u.st.Store.AppendLLMUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := u.signedIn(t)
	resp, body := u.get(t, c, "/ui/llm")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("llm: %s\n%s", resp.Status, body)
	}
	noMarkup(t, "llm page", body)

	// The same numbers as station llm usage, for the last 24 hours.
	usage, err := u.st.LLMUsage(ctx, noon.Add(-station.BudgetWindow), noon)
	if err != nil {
		t.Fatal(err)
	}
	var cli station.LLMUsage
	for _, x := range usage {
		if x.Module == llmModule {
			cli = x
		}
	}
	if cli.Calls != 1 || cli.UsedInWindow != 1500 || cli.BudgetTokensPerDay != 1000 {
		t.Fatalf("station llm usage: %+v", cli)
	}
	for _, tc := range []struct {
		table, key string
		want       []string
	}{
		// calls, prompt, completion, tokens (24 h), budget, %, calls and tokens (14 days)
		{"llm-modules", llmModule, []string{`<tr class="over">`, `href="/ui/modules/test/llm"`, fmt.Sprintf("<td>%d</td><td>%d</td><td>%d</td><td>%d</td>", cli.Calls, cli.PromptTokens, cli.CompletionTokens, cli.UsedInWindow),
			fmt.Sprintf("<td>%d</td>", cli.BudgetTokensPerDay), `<span class="badge bad">150%</span>`, "<td>2</td><td>1700</td>"}},
		{"llm-modules", "(station)", []string{"<td>1</td><td>30</td><td>12</td><td>42</td><td>none</td><td>—</td><td>1</td><td>42</td>"}},
		{"llm-modules", "&lt;script&gt;", []string{"(removed)", "<td>0</td><td>0</td><td>0</td><td>0</td><td>none</td><td>—</td><td>1</td><td>5</td>"}},
		{"llm-modules", probeID, nil}, // not granted the LLM, and no use: no row
		// runs, calls, tokens (24 h), runs, calls, tokens (14 days)
		{"llm-workflows", "digest", []string{"<td>1</td><td>2</td><td>1542</td><td>1</td><td>2</td><td>1542</td>"}},
	} {
		row := tableRow(body, tc.table, tc.key)
		if tc.want == nil {
			if row != "" {
				t.Errorf("%s has a row for %s: %s", tc.table, tc.key, row)
			}
			continue
		}
		if row == "" {
			t.Errorf("%s has no row for %s:\n%s", tc.table, tc.key, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(row, w) {
				t.Errorf("%s row of %s lacks %q:\n%s", tc.table, tc.key, w, row)
			}
		}
	}

	// test/llm's chart: 14 days, a bar today (over the budget) and three
	// days ago, a dashed budget line, a text alternative.
	i := strings.Index(body, `<h3>`+llmModule+`</h3>`)
	if i < 0 {
		t.Fatalf("no chart for %s:\n%s", llmModule, body)
	}
	chart := body[i:]
	chart = chart[:strings.Index(chart, "</svg>")]
	first := noon.Truncate(24*time.Hour).AddDate(0, 0, -13)
	for _, want := range []string{`<svg class="chart"`, `role="img"`,
		fmt.Sprintf(`aria-label="Tokens per UTC day spent by test/llm, %s to %s: at most 1500, on %s; budget 1000 a day, exceeded on 1 day"`,
			first.Format(time.DateOnly), noon.Format(time.DateOnly), noon.Format(time.DateOnly)),
		`<line class="budget"`, "<title>budget: 1000 tokens a day</title>",
		fmt.Sprintf("<title>%s: 1500 tokens in 1 call, over the budget</title>", noon.Format(time.DateOnly)),
		fmt.Sprintf("<title>%s: 200 tokens in 1 call</title>", noon.AddDate(0, 0, -3).Format(time.DateOnly))} {
		if !strings.Contains(chart, want) {
			t.Errorf("chart lacks %q:\n%s", want, chart)
		}
	}
	if n, o := strings.Count(chart, `<rect class="use"`), strings.Count(chart, `<rect class="over"`); n != 1 || o != 1 {
		t.Errorf("chart: %d bars under the budget and %d over, want 1 and 1 (days without use have none):\n%s", n, o, chart)
	}
	if n := strings.Count(chart, `text-anchor="middle"`); n != ui.LLMDays {
		t.Errorf("chart: %d days labeled, want %d", n, ui.LLMDays)
	}
	// The station's own use has no budget line.
	i = strings.Index(body, "<h3>(station)</h3>")
	if i < 0 {
		t.Fatalf("no chart for the station's own use:\n%s", body)
	}
	if own := body[i:]; strings.Contains(own[:strings.Index(own, "</svg>")], `class="budget"`) {
		t.Errorf("the station's own use has a budget line:\n%s", own)
	}
}
