package hubserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/ocitest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// Several hub nodes on one PostgreSQL database behind one URL: every node
// serves every request, a push accepted by one node reaches a station
// connected to another, the rate limits hold across nodes, and a node
// killed outright loses nothing.

// node runs a hub on the shared database dsn and blob storage blobs (a
// directory or an OCI registry's URL), in this process, for the rest of
// the test.
func node(t testing.TB, dsn, blobs string, configure func(*hubserver.Options)) *hubtest.Hub {
	t.Helper()
	st, err := hubserver.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := hubserver.OpenBlobs(context.Background(), blobs)
	if err != nil {
		t.Fatal(err)
	}
	o := hubserver.Options{Store: st, Blobs: b}
	if configure != nil {
		configure(&o)
	}
	h := hubtest.Serve(t, o)
	h.Dir = filepath.Dir(blobs)
	return h
}

// cluster starts n nodes on a fresh database of the test's own.
func cluster(t testing.TB, n int, configure func(*hubserver.Options)) []*hubtest.Hub {
	t.Helper()
	dsn, blobs := pgtest.DSN(t), filepath.Join(t.TempDir(), "blobs")
	nodes := make([]*hubtest.Hub, n)
	for i := range nodes {
		nodes[i] = node(t, dsn, blobs, configure)
	}
	return nodes
}

// TestClusterRelayCrossesNodes: stations connected to different nodes all
// get every event of their team, each exactly once and in the log's order,
// while pushes are accepted by both nodes in turn.
func TestClusterRelayCrossesNodes(t *testing.T) {
	nodes := cluster(t, 2, nil)
	n1, n2 := nodes[0], nodes[1]
	dave, _, _ := team(t, n1)
	start := lastSeq(t, n1)
	// The same accounts, through the other node.
	erinOn2 := n2.Client(t, n2.Account(t, "erin2"))
	inv, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "erin2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := erinOn2.Join(ctx, inv.Code); err != nil {
		t.Fatal(err)
	}
	onNode2 := subscribe(t, erinOn2, start)
	onNode1 := subscribe(t, dave, start)
	within(t, onNode2.connected, "node 2's connection")
	within(t, onNode1.connected, "node 1's connection")
	onNode2.next(t, hub.EventMemberJoined)
	onNode1.next(t, hub.EventMemberJoined)

	// Dave pushes through node 1 and node 2 in turn (a station's requests
	// land on any node behind the URL).
	daveVia := []interface {
		PushLockfile(context.Context, string, int64, hub.Lockfile) (hub.TeamLockfile, error)
	}{dave, n2.Client(t, tokenOf(t, n1, "dave"))}
	const pushes = 12
	for rev := int64(0); rev < pushes; rev++ {
		pushed := time.Now()
		if _, err := daveVia[rev%2].PushLockfile(ctx, "acme", rev, hub.Lockfile{}); err != nil {
			t.Fatalf("push %d through node %d: %v", rev+1, rev%2+1, err)
		}
		for name, s := range map[string]*subscription{"node 1": onNode1, "node 2": onNode2} {
			ev := s.next(t, hub.EventLockfilePushed)
			if ev.Revision != rev+1 {
				t.Fatalf("%s's station got revision %d, want %d", name, ev.Revision, rev+1)
			}
			// Without the cross-node wake-up a node would learn of the
			// other's commits only on its idle check, 30 s later.
			if took := time.Since(pushed); took > time.Second {
				t.Errorf("revision %d reached %s's station %s after the push", rev+1, name, took)
			}
		}
	}
	for name, s := range map[string]*subscription{"node 1": onNode1, "node 2": onNode2} {
		select {
		case ev := <-s.events:
			t.Errorf("%s's station got an extra event %d %s", name, ev.Seq, ev.Kind)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestClusterRateLimitHolds: a client's burst is shared by the nodes: what
// one node allowed, another does not allow again.
func TestClusterRateLimitHolds(t *testing.T) {
	const burst = 6
	nodes := cluster(t, 3, func(o *hubserver.Options) {
		o.Limits.RatePerSecond = 0.001 // no refill within the test
		o.Limits.Burst = burst
	})
	for _, who := range []string{"", "account"} {
		t.Run("as "+map[string]string{"": "anonymous", "account": "an account"}[who], func(t *testing.T) {
			token := ""
			if who != "" {
				token = nodes[0].Account(t, "carol")
			}
			allowed := 0
			for i := 0; i < 2*burst; i++ {
				a := send(t, nodes[i%len(nodes)], http.MethodGet, "/v1/modules?q=x", token, nil)
				switch {
				case a.status == http.StatusOK:
					allowed++
				case a.code() == hub.CodeRateLimited:
				default:
					t.Fatalf("request %d: %d %s", i, a.status, a.body)
				}
			}
			if allowed != burst {
				t.Errorf("%d requests spread over %d nodes were allowed, want the burst of %d", allowed, len(nodes), burst)
			}
		})
	}
}

// TestClusterNodeKilled: a node is killed (SIGKILL, no shutdown at all)
// while a station is connected to it through the load balancer and while
// pushes keep being accepted by the other node. The station reconnects
// through the same URL, lands on the survivor and gets every event after
// its cursor exactly once, in order; what the dead node had committed is
// there, and nothing it had not.
func TestClusterNodeKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hub process")
	}
	dsn, blobs := pgtest.DSN(t), filepath.Join(t.TempDir(), "blobs")
	survivor := node(t, dsn, blobs, nil)
	doomed := startNodeProcess(t, dsn, blobs)
	lb := startBalancer(t, "http://"+doomed.addr, survivor.URL)
	eventually(t, "both nodes ready", func() bool { return lb.isReady("http://"+doomed.addr) && lb.isReady(survivor.URL) })
	front := &hubtest.Hub{URL: lb.url, Store: survivor.Store}

	dave, erin, _ := team(t, front)
	sub := subscribe(t, erin, lastSeq(t, survivor))
	within(t, sub.connected, "the connection through the load balancer")
	if reqs := lb.streamRequests(); len(reqs) == 0 || reqs[0].backend != "http://"+doomed.addr {
		t.Fatalf("the station's stream went to %+v, want the first node", reqs)
	}
	if _, err := dave.PushLockfile(ctx, "acme", 0, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	if ev := sub.next(t, hub.EventLockfilePushed); ev.Revision != 1 {
		t.Fatalf("got revision %d, want 1", ev.Revision)
	}

	doomed.kill(t)
	daveOnSurvivor := survivor.Client(t, tokenOf(t, survivor, "dave"))
	for rev := int64(1); rev < 6; rev++ {
		if _, err := daveOnSurvivor.PushLockfile(ctx, "acme", rev, hub.Lockfile{}); err != nil {
			t.Fatal(err)
		}
	}
	for rev := int64(2); rev <= 6; rev++ {
		if ev := sub.next(t, hub.EventLockfilePushed); ev.Revision != rev {
			t.Fatalf("after the node died the station got revision %d, want %d", ev.Revision, rev)
		}
	}
	within(t, sub.connected, "the reconnection")
	// The URL keeps working for everything else too.
	if _, err := dave.PushLockfile(ctx, "acme", 6, hub.Lockfile{}); err != nil {
		t.Fatalf("a push through the load balancer after the node died: %v", err)
	}
	if ev := sub.next(t, hub.EventLockfilePushed); ev.Revision != 7 {
		t.Fatalf("got revision %d, want 7", ev.Revision)
	}
	select {
	case ev := <-sub.events:
		t.Errorf("an extra event %d %s", ev.Seq, ev.Kind)
	case <-time.After(200 * time.Millisecond):
	}
}

type nodeProcess struct {
	addr string
	cmd  *exec.Cmd
}

// startNodeProcess runs a hub node in a process of its own (this test
// binary again), so that it can be killed.
func startNodeProcess(t testing.TB, dsn, blobs string, env ...string) *nodeProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), hubserver.EnvTestNode+"="+dsn+"\n"+blobs)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &nodeProcess{cmd: cmd}
	t.Cleanup(func() { p.kill(t) })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		io.Copy(io.Discard, out)
	}()
	select {
	case addr, ok := <-line:
		if !ok {
			t.Fatal("the hub node process ended before it listened")
		}
		p.addr = addr
	case <-time.After(30 * time.Second):
		t.Fatal("the hub node process did not listen within 30 s")
	}
	return p
}

// kill kills the node with SIGKILL and waits for it.
func (p *nodeProcess) kill(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Error(err)
	}
	p.cmd.Wait()
}

// BenchmarkClusterPush measures a lockfile push until every connected
// station of the team has its event, with the stations on the node that
// accepted the push or on another node of the same database (the
// LISTEN/NOTIFY hop), against one SQLite hub as the baseline.
func BenchmarkClusterPush(b *testing.B) {
	fast := func(o *hubserver.Options) { o.Limits.RatePerSecond, o.Limits.Burst = 1e6, 1e6 }
	for _, stations := range []int{2, 32} {
		b.Run(fmt.Sprintf("stations=%d/sqlite", stations), func(b *testing.B) {
			h := hubtest.StartWith(b, fast)
			if _, ok := h.Store.(*hubserver.SQLite); !ok {
				b.Skip("the baseline is SQLite; unset", hubtest.EnvDB)
			}
			benchPush(b, h, h, stations)
		})
		b.Run(fmt.Sprintf("stations=%d/postgres-same-node", stations), func(b *testing.B) {
			nodes := cluster(b, 1, fast)
			benchPush(b, nodes[0], nodes[0], stations)
		})
		b.Run(fmt.Sprintf("stations=%d/postgres-other-node", stations), func(b *testing.B) {
			nodes := cluster(b, 2, fast)
			benchPush(b, nodes[0], nodes[1], stations)
		})
	}
}

// benchPush pushes through at while stations members of the team follow
// the stream of on.
func benchPush(b *testing.B, at, on *hubtest.Hub, stations int) {
	dave := at.Client(b, at.Account(b, "dave"))
	if _, err := dave.CreateTeam(ctx, "acme"); err != nil {
		b.Fatal(err)
	}
	start := lastSeq(b, at)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chans []chan hub.Event
	for i := range stations {
		name := fmt.Sprintf("member%d", i)
		c := on.Client(b, on.Account(b, name))
		inv, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: name})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Join(ctx, inv.Code); err != nil {
			b.Fatal(err)
		}
		events, connected := make(chan hub.Event, 2*stations+16), make(chan int64, 1)
		chans = append(chans, events)
		go c.Subscribe(sctx, hubclient.SubscribeOptions{Cursor: start, OnConnect: func(c int64) { connected <- c }}, func(ev hub.Event) error {
			if ev.Kind == hub.EventLockfilePushed {
				events <- ev
			}
			return nil
		})
		within(b, connected, "connection")
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := dave.PushLockfile(ctx, "acme", int64(i), hub.Lockfile{}); err != nil {
			b.Fatal(err)
		}
		for _, ch := range chans {
			if ev := within(b, ch, "event"); ev.Revision != int64(i+1) {
				b.Fatalf("got %+v", ev)
			}
		}
	}
}

// TestClusterPublishOnOneInstallOnAnother: two nodes on one database and
// one OCI registry: a module published through one node is fetched,
// verified, through the other, and the registry holds it as an artifact.
func TestClusterPublishOnOneInstallOnAnother(t *testing.T) {
	dsn, reg := pgtest.DSN(t), ocitest.URL(t)
	n1, n2 := node(t, dsn, reg, nil), node(t, dsn, reg, nil)
	dave, signer := n1.Publisher(t, "dave")
	v := publish(t, dave, signer, "dave/x", "1.0.0")
	erin := n2.Client(t, n2.Account(t, "erin"))
	pkg, err := erin.Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{})
	if err != nil {
		t.Fatalf("fetch through the other node: %v", err)
	}
	if got := hub.Digest(pkg.Wasm); got != v.WasmDigest {
		t.Errorf("the other node served wasm %s, want %s", got, v.WasmDigest)
	}
	if _, ok := n2.Blobs.(*hubserver.OCIRegistry); !ok {
		t.Errorf("the nodes keep blobs in %T, want the registry", n2.Blobs)
	}
}

// TestClusterNodeKilledMidPublish: a node is killed (SIGKILL) while a
// publish's body is still arriving. The publish leaves nothing: no
// version, no stored blob (only an upload in progress, which the blob
// directory drops once stale and a registry's garbage collection takes),
// and the same version publishes whole through the other node.
func TestClusterNodeKilledMidPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hub process")
	}
	dsn, blobs := pgtest.DSN(t), filepath.Join(t.TempDir(), "blobs")
	survivor := node(t, dsn, blobs, nil)
	doomed := startNodeProcess(t, dsn, blobs)
	dave, signer := survivor.Publisher(t, "dave")
	token := tokenOf(t, survivor, "dave")
	before := blobCount(t, survivor)

	b, err := hubclient.NewBundle(hubtest.Manifest("dave/big", "1.0.0"), hubtest.Wasm(strings.Repeat("w", 4<<20)), signer)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+doomed.addr+"/v1/modules", pr)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("the publish was answered %s", resp.Status)
		}
		answered <- err
	}()
	if _, err := pw.Write(body[:len(body)*2/3]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the node is receiving the wasm
	doomed.kill(t)
	pw.Close()
	if err := within(t, answered, "the publish to end"); err == nil || strings.Contains(err.Error(), "answered") {
		t.Fatalf("the publish to the killed node: %v, want its connection broken", err)
	}

	if _, err := survivor.Store.Version(ctx, "dave/big", "1.0.0"); !errors.Is(err, hubserver.ErrNotFound) {
		t.Errorf("after the node died mid-publish the version is there (%v)", err)
	}
	if n := blobCount(t, survivor) - before; n > 1 {
		// the upload in progress (.tmp-…) may stay until it is stale
		t.Errorf("the killed publish left %d files among the blobs, want at most its upload in progress", n)
	}
	if _, err := dave.Publish(ctx, b); err != nil {
		t.Fatalf("the same version through the other node: %v", err)
	}
	if v, err := survivor.Store.Version(ctx, "dave/big", "1.0.0"); err != nil || v.WasmDigest != hub.Digest(b.Wasm) {
		t.Errorf("after the publish through the survivor: %+v, %v", v, err)
	}
}
