package ui

import (
	"html/template"
	"time"
)

// navEntry is one menu entry of the layout.
type navEntry struct {
	Name, Label string
	Current     bool
}

// funcs are the templates' helpers. None returns template.HTML: every
// value a template prints is escaped for where it goes.
var funcs = template.FuncMap{
	"nav": func(p page, name, label string) navEntry {
		return navEntry{Name: name, Label: label, Current: p.Nav == name || p.Nav == "module" && name == "modules" || p.Nav == "run" && name == "runs"}
	},
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000")
	},
	"dur": func(d time.Duration) string {
		switch {
		case d <= 0:
			return "—"
		case d < time.Millisecond:
			return d.Round(time.Microsecond).String()
		case d < time.Second:
			return d.Round(100 * time.Microsecond).String()
		}
		return d.Round(time.Millisecond).String()
	},
}
