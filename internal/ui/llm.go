package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// LLMDays is how many UTC days (today included) the LLM page charts.
const LLMDays = 14

// stationOwn is how the station's own use (workflow llm steps) is listed,
// as station llm usage lists it.
const stationOwn = "(station)"

const day = 24 * time.Hour

// llmPageData is the LLM page: what the station's LLM spent for each
// module (and for itself) against each module's approved budget, and for
// each workflow.
type llmPageData struct {
	Provider  string
	Days      int
	From, To  time.Time // the first and the last day charted (UTC)
	Modules   []llmModule
	Workflows []llmWorkflow
}

// llmModule is one module's spending (ID "" for the station's own).
type llmModule struct {
	ID, Name string
	// Installed links the module's page (a removed module keeps its
	// usage).
	Installed bool
	// The last 24 hours, as station llm usage shows them: Used is what
	// counts against Budget (0: no budget) now.
	Calls, PromptTokens, CompletionTokens, Used, Budget int64
	// Percent is Used of Budget; Over when it is past it.
	Percent int
	Over    bool
	// Calls14 and Tokens14 are the charted days' totals.
	Calls14, Tokens14 int64
	Chart             chart
}

// llmWorkflow is one workflow's spending: its llm steps and the calls of
// the modules its steps ran.
type llmWorkflow struct {
	Name                      string
	Runs, Calls, Tokens       int64 // the last 24 hours
	Runs14, Calls14, Tokens14 int64
}

// chart is a bar chart of tokens per day, laid out in Go (integers in
// the SVG's own units): the page's CSP forbids inline styles.
type chart struct {
	Width, Height int
	// Label is the text alternative of the whole chart.
	Label string
	Bars  []chartBar
	// Base is the y of the axis; Left and Right its ends.
	Base, Left, Right int
	// Budget is the y of the budget line of BudgetTokens a day
	// (HasBudget false: none).
	Budget       int
	BudgetTokens int64
	HasBudget    bool
	// LabelY is the y of the days' labels.
	LabelY int
	// Top is the value at the chart's top, labeled at TopY.
	Top  int64
	TopY int
}

// chartBar is one day.
type chartBar struct {
	Day                time.Time
	Calls, Tokens      int64
	X, Y, W, H, Center int
	Over               bool
}

// Chart geometry, in the SVG's units.
const (
	chartLeft  = 56 // room for the scale's labels
	chartTop   = 8
	chartPlotH = 120
	chartBarW  = 22
	chartGap   = 8
	chartFoot  = 20 // room for the days' labels
)

// niceCeil is the smallest 1, 2 or 5 times a power of ten at least n.
func niceCeil(n int64) int64 {
	if n <= 1 {
		return 1
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
		if p > 1e17 {
			return n
		}
	}
}

// newChart charts tokens per day from first, one bar a day; days without
// use have none.
func newChart(name string, first time.Time, days []store.LLMDay, budget int64) chart {
	byDay := map[time.Time]store.LLMDay{}
	var peak store.LLMDay
	for _, d := range days {
		byDay[d.Day] = d
		if d.Tokens() > peak.Tokens() {
			peak = d
		}
	}
	top := niceCeil(max(peak.Tokens(), budget))
	c := chart{Width: chartLeft + LLMDays*(chartBarW+chartGap) + chartGap, Height: chartTop + chartPlotH + chartFoot,
		Base: chartTop + chartPlotH, Left: chartLeft, Top: top, TopY: chartTop, LabelY: chartTop + chartPlotH + chartFoot - 6}
	c.Right = c.Width - 2
	scale := func(v int64) int { return int(float64(v) * chartPlotH / float64(top)) }
	over := 0
	for i := range LLMDays {
		at := first.AddDate(0, 0, i)
		d := byDay[at]
		b := chartBar{Day: at, Calls: d.Calls, Tokens: d.Tokens(), X: chartLeft + chartGap + i*(chartBarW+chartGap), W: chartBarW}
		b.Center = b.X + chartBarW/2
		if b.Tokens > 0 {
			b.H = max(scale(b.Tokens), 1)
			b.Y = c.Base - b.H
			b.Over = budget > 0 && b.Tokens > budget
			if b.Over {
				over++
			}
		}
		c.Bars = append(c.Bars, b)
	}
	if budget > 0 {
		c.HasBudget, c.Budget, c.BudgetTokens = true, c.Base-scale(budget), budget
	}
	last := first.AddDate(0, 0, LLMDays-1)
	var l strings.Builder
	fmt.Fprintf(&l, "Tokens per UTC day spent by %s, %s to %s: ", name, first.Format(time.DateOnly), last.Format(time.DateOnly))
	if peak.Tokens() == 0 {
		l.WriteString("none")
	} else {
		fmt.Fprintf(&l, "at most %d, on %s", peak.Tokens(), peak.Day.Format(time.DateOnly))
	}
	if budget > 0 {
		fmt.Fprintf(&l, "; budget %d a day, exceeded on %d day", budget, over)
		if over != 1 {
			l.WriteString("s")
		}
	} else {
		l.WriteString("; no budget")
	}
	c.Label = l.String()
	return c
}

func (s *Server) llmPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := s.now()
	today := now.UTC().Truncate(day)
	first := today.AddDate(0, 0, -(LLMDays - 1))
	data := llmPageData{Days: LLMDays, From: first, To: today}
	if s.wf != nil {
		data.Provider = s.wf.Provider
	}
	// The last 24 hours: what station llm usage shows.
	usage, err := s.st.LLMUsage(ctx, now.Add(-station.BudgetWindow), now)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	daily, err := s.st.Store.LLMDaily(ctx, first)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	installed, err := s.st.Store.Modules(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	rows := map[string]*llmModule{}
	row := func(id string) *llmModule {
		if m, ok := rows[id]; ok {
			return m
		}
		m := &llmModule{ID: id, Name: id}
		if id == "" {
			m.Name = stationOwn
		}
		rows[id] = m
		return m
	}
	// Every installed module that may use the LLM has a row, used or not,
	// with its approved budget (as station llm usage reads it).
	for _, m := range installed {
		var p station.Permissions
		if json.Unmarshal(m.Approved, &p) != nil {
			continue
		}
		if p.LLM != nil {
			row(m.ID).Budget = p.LLM.BudgetTokensPerDay
		}
	}
	for _, u := range usage {
		m := row(u.Module)
		m.Calls, m.PromptTokens, m.CompletionTokens, m.Budget = u.Calls, u.PromptTokens, u.CompletionTokens, u.BudgetTokensPerDay
		m.Used = u.PromptTokens + u.CompletionTokens
		if u.Module != "" {
			m.Used = u.UsedInWindow
		}
	}
	byModule := map[string][]store.LLMDay{}
	for _, d := range daily {
		row(d.Module)
		byModule[d.Module] = append(byModule[d.Module], d)
	}
	isInstalled := map[string]bool{}
	for _, m := range installed {
		isInstalled[m.ID] = true
	}
	for _, m := range rows {
		m.Installed = isInstalled[m.ID]
		for _, d := range byModule[m.ID] {
			m.Calls14 += d.Calls
			m.Tokens14 += d.Tokens()
		}
		if m.Budget > 0 {
			m.Percent = int(min(m.Used*100/m.Budget, 999))
			m.Over = m.Used > m.Budget
		}
		m.Chart = newChart(m.Name, first, byModule[m.ID], m.Budget)
		data.Modules = append(data.Modules, *m)
	}
	// The station's own use first, then by module, as the CLI lists them.
	slices.SortFunc(data.Modules, func(a, b llmModule) int { return strings.Compare(a.ID, b.ID) })

	recent, err := s.st.Store.LLMWorkflowTotals(ctx, now.Add(-station.BudgetWindow))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	charted, err := s.st.Store.LLMWorkflowTotals(ctx, first)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	wfs := map[string]*llmWorkflow{}
	get := func(name string) *llmWorkflow {
		if f, ok := wfs[name]; ok {
			return f
		}
		f := &llmWorkflow{Name: name}
		wfs[name] = f
		return f
	}
	for _, t := range recent {
		f := get(t.Workflow)
		f.Runs, f.Calls, f.Tokens = t.Runs, t.Calls, t.Tokens()
	}
	for _, t := range charted {
		f := get(t.Workflow)
		f.Runs14, f.Calls14, f.Tokens14 = t.Runs, t.Calls, t.Tokens()
	}
	for _, f := range wfs {
		data.Workflows = append(data.Workflows, *f)
	}
	slices.SortFunc(data.Workflows, func(a, b llmWorkflow) int { return strings.Compare(a.Name, b.Name) })
	s.render(w, r, http.StatusOK, "llm", "LLM", data)
}
