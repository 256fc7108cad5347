package ui_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/sandbox"
)

func deny(module, target string) sandbox.Decision {
	return sandbox.Decision{Time: time.Now(), Module: module, Command: "run", Capability: sandbox.Network, Target: target, Reason: "is not in its allowlist"}
}

func allow(module, target string) sandbox.Decision {
	return sandbox.Decision{Time: time.Now(), Module: module, Command: "run", Capability: sandbox.Network, Target: target, Allowed: true}
}

var rowID = regexp.MustCompile(`<tr class="(allow|deny)" id="d(\d+)">`)

// TestAuditPages: filters select, the cursor pages through the log without
// a gap or a repeat, and a denial of a workflow step links to its run.
func TestAuditPages(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	var ds []sandbox.Decision
	for i := range 250 {
		d := allow("a/one", fmt.Sprintf("h%d.example:443", i))
		if i%5 == 0 {
			d = deny("b/two", fmt.Sprintf("h%d.example:443", i))
			d.Trace = fmt.Sprintf("run/%d/step/fetch/attempt/1", 7)
		}
		ds = append(ds, d)
	}
	if err := u.st.Store.AppendAudit(ctx, ds); err != nil {
		t.Fatal(err)
	}
	c, _ := u.signedIn(t)
	seen := map[string]bool{}
	next := "/ui/audit"
	pages := 0
	for next != "" {
		_, body := u.get(t, c, next)
		pages++
		for _, m := range rowID.FindAllStringSubmatch(body, -1) {
			if seen[m[2]] {
				t.Fatalf("decision %s on two pages", m[2])
			}
			seen[m[2]] = true
		}
		next = ""
		if m := regexp.MustCompile(`<a rel="next" href="([^"]+)">`).FindStringSubmatch(body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	// The probe's install made no decision: 250 rows, 100 to a page.
	if len(seen) != 250 || pages != 3 {
		t.Errorf("%d decisions on %d pages, want 250 on 3", len(seen), pages)
	}
	_, body := u.get(t, c, "/ui/audit?result=denied&module=b/two")
	rows := rowID.FindAllStringSubmatch(body, -1)
	if len(rows) != 50 {
		t.Errorf("denied of b/two: %d rows, want 50", len(rows))
	}
	for _, r := range rows {
		if r[1] != "deny" {
			t.Errorf("an allowed row among the denials")
		}
	}
	if !strings.Contains(body, `<a href="/ui/runs/7">run 7</a>`) || !strings.Contains(body, `<a href="/ui/modules/b/two">b/two</a>`) {
		t.Errorf("a denial does not link to its run and module:\n%s", body)
	}
	if _, body := u.get(t, c, "/ui/audit?result=allowed&capability=subprocess"); len(rowID.FindAllString(body, -1)) != 0 || !strings.Contains(body, "No decision matches") {
		t.Errorf("no match:\n%s", body)
	}
}

// TestAuditLiveTail: the stream sends, under the page's filters, each
// decision newer than the page as it is stored, resumes after the last
// event it sent when the browser reconnects, and ends when the daemon
// stops.
func TestAuditLiveTail(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{deny("b/two", "old.example:443")}); err != nil {
		t.Fatal(err)
	}
	c, _ := u.signedIn(t)
	_, page := u.get(t, c, "/ui/audit?result=denied")
	m := regexp.MustCompile(`data-stream="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no live tail on the first page:\n%s", page)
	}
	stream := strings.ReplaceAll(m[1], "&amp;", "&")
	if !strings.Contains(stream, "result=denied") {
		t.Fatalf("the tail does not keep the filter: %s", stream)
	}
	events := func(lastID string) (<-chan [2]string, func()) {
		req, _ := http.NewRequest(http.MethodGet, u.base+stream, nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		cctx, cancel := context.WithCancel(ctx)
		resp, err := c.Do(req.WithContext(cctx))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %s", resp.Status)
		}
		out := make(chan [2]string, 16)
		go func() {
			defer close(out)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var id, data string
			for sc.Scan() {
				switch l := sc.Text(); {
				case strings.HasPrefix(l, "id: "):
					id = l[4:]
				case strings.HasPrefix(l, "data: "):
					data += l[6:]
				case l == "" && id != "":
					out <- [2]string{id, data}
					id, data = "", ""
				}
			}
		}()
		return out, cancel
	}
	next := func(ch <-chan [2]string) [2]string {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return [2]string{}
	}
	ch, stop := events("")
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{allow("a/one", "fine.example:443"), deny("b/two", "new.example:443")}); err != nil {
		t.Fatal(err)
	}
	ev := next(ch)
	if !strings.Contains(ev[1], "new.example:443") || strings.Contains(ev[1], "old.example") {
		t.Errorf("first event %v: want the new denial only", ev)
	}
	stop()
	// A decision while the browser was away, then a reconnect from the
	// last event it got: that one, not the one before.
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{deny("b/two", "meanwhile.example:443")}); err != nil {
		t.Fatal(err)
	}
	ch, stop = events(ev[0])
	defer stop()
	if ev := next(ch); !strings.Contains(ev[1], "meanwhile.example:443") {
		t.Errorf("after reconnecting: %v", ev)
	}
	// A stream must not hold the daemon's stop.
	start := time.Now()
	u.ui.Close()
	stopDaemon(t, u)
	for range ch {
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the daemon took %s to stop with a stream open", d)
	}
}

// TestAuditStreamFraming: a module's text with line breaks of every kind
// an event stream knows (CR, LF, CRLF) stays inside its one event: it
// cannot start a field (an id, an event, data of its own).
func TestAuditStreamFraming(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	evil := deny("b/two", "a\rid: 999999\revent: forged\rdata: <b>cr</b>\nid: 999998\r\nevent: forged\r\ndata: lf\n\nretry: 1")
	evil.Reason = "\r\rdata: x"
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{evil, deny("b/two", "after.example:443")}); err != nil {
		t.Fatal(err)
	}
	c, _ := u.signedIn(t)
	resp, err := c.Get(u.base + "/ui/audit/stream?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read as a browser does: CR, LF and CRLF each end a line.
	sc := bufio.NewScanner(resp.Body)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		for i, b := range data {
			if b == '\n' {
				return i + 1, data[:i], nil
			}
			if b == '\r' {
				if i+1 < len(data) {
					if data[i+1] == '\n' {
						return i + 2, data[:i], nil
					}
					return i + 1, data[:i], nil
				}
				if atEOF {
					return i + 1, data[:i], nil
				}
				return 0, nil, nil
			}
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	var ids, kinds []string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "id:"):
			ids = append(ids, strings.TrimSpace(l[3:]))
		case strings.HasPrefix(l, "event:"):
			kinds = append(kinds, strings.TrimSpace(l[6:]))
		case strings.HasPrefix(l, "retry:") && strings.TrimSpace(l[6:]) != "2000":
			t.Errorf("a module's text set the retry: %q", l)
		}
		if len(kinds) == 2 {
			break
		}
	}
	if strings.Join(ids, ",") != "1,2" || strings.Join(kinds, ",") != "decision,decision" {
		t.Errorf("events: ids %v, kinds %v; want ids 1,2 and two decisions", ids, kinds)
	}
}
