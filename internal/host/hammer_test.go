package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
)

// countingResolver fails every lookup and counts it: the hammer's names all
// come from the operator's resolve map, and refused names must never be
// looked up at all.
type countingResolver struct{ n atomic.Int64 }

func (r *countingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.n.Add(1)
	return nil, fmt.Errorf("no DNS in tests (%s)", host)
}

// Many goroutines call several modules with different allowlists at once;
// every decision in the audit stream is attributed to the module that made
// the call and matches that module's own policy; no DNS query is ever made.
func TestHammerModulesWithDifferentPolicies(t *testing.T) {
	ca := fixture.NewCA(t)
	names := []string{"api.alpha.com", "api.beta.com", "api.gamma.com", "api.delta.com"}
	srv := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Host) }), names...)
	res := &countingResolver{}
	op := &netgate.Operator{
		Resolve:      map[string]netip.AddrPort{},
		RootCAs:      ca.Pool(),
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver:     res,
	}
	for _, n := range names {
		op.Resolve[n+":443"] = srv.Addr
	}
	var mu sync.Mutex
	var decisions []sandbox.Decision
	h := newHost(t, host.Options{Operator: op, Recorder: sandbox.RecorderFunc(func(d sandbox.Decision) {
		mu.Lock()
		decisions = append(decisions, d)
		mu.Unlock()
	})})
	wasm := probe.Wasm(t)
	own := map[string]string{}
	for i, n := range names {
		id := fmt.Sprintf("test/m%d", i)
		own[id] = n
		man := parse(t, strings.Replace(probeNoNet, "test/probe", id, 1))
		man.Requires.Network.Allow = []string{n}
		if _, err := h.Load(context.Background(), man, wasm); err != nil {
			t.Fatal(err)
		}
	}
	var actions []probe.Action
	for _, n := range append(names, "unlisted.example") {
		actions = append(actions, probe.HTTP("GET", "https://"+n+"/"))
	}
	const workers, calls = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, len(own)*workers*calls)
	for id := range own {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := 0; c < calls; c++ {
					out, err := h.Call(context.Background(), id, probe.Command, probe.Run(actions...))
					if err != nil {
						errs <- fmt.Errorf("%s: %v", id, err)
						return
					}
					rs, err := probe.Decode(out)
					if err != nil {
						errs <- err
						return
					}
					for i, r := range rs {
						allowed := i < len(names) && names[i] == own[id]
						if r.OK != allowed || (allowed && r.Body != own[id]) || (!allowed && (r.Error == nil || r.Error.Code != "denied" || !strings.Contains(r.Error.Message, "module "+id+":"))) {
							errs <- fmt.Errorf("%s -> %s: got ok=%v body=%q error=%+v", id, actions[i].URL, r.OK, r.Body, r.Error)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range decisions {
		host, _, _ := strings.Cut(d.Target, ":")
		mine := host == own[d.Module]
		if _, known := own[d.Module]; !known || d.Command != probe.Command || (d.Allowed != mine) {
			t.Fatalf("decision %+v: wrong attribution or policy (module %q owns %q)", d, d.Module, own[d.Module])
		}
	}
	if got, want := len(decisions), len(own)*workers*calls*(len(names)+1+1); got < want-len(own)*workers*calls {
		t.Errorf("%d decisions recorded, want about %d", got, want)
	}
	if q := res.n.Load(); q != 0 {
		t.Errorf("%d DNS queries were made; every name was either in the resolve map or refused before resolution", q)
	}
}
