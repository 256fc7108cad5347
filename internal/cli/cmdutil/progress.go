package cmdutil

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress shows that long work goes on: on a terminal, one line on stderr
// redrawn with a spinner and the time so far; elsewhere nothing, so that a
// script's logs hold only what the command prints when it is done.
type Progress struct {
	w     io.Writer
	label string
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	once  sync.Once
}

// spinEvery is how often the line is redrawn.
const spinEvery = 120 * time.Millisecond

// StartProgress starts showing label ("building dave/x@1.0.0"). Stop it,
// always, before printing anything else.
func (f *Factory) StartProgress(label string) *Progress {
	p := &Progress{w: f.IO.Err, label: TermText(label), start: time.Now()}
	if !f.IO.ErrIsTerminal {
		return p
	}
	p.stop = make(chan struct{})
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(spinEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(p.w, "\r\x1b[K%c %s %s", frames[i%len(frames)], p.label, p.Elapsed().Round(100*time.Millisecond))
			select {
			case <-p.stop:
				fmt.Fprint(p.w, "\r\x1b[K")
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// Elapsed is the time since the work started.
func (p *Progress) Elapsed() time.Duration { return time.Since(p.start) }

// Stop clears the line and returns how long the work took. It may be
// called more than once.
func (p *Progress) Stop() time.Duration {
	p.once.Do(func() {
		if p.stop != nil {
			close(p.stop)
			p.done.Wait()
		}
	})
	return p.Elapsed()
}

// Round rounds a duration the way the CLI prints one: microseconds under
// a millisecond, milliseconds under a second, hundredths above.
func Round(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
