package hubserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// EnvTestNode makes the test binary a hub node (TestMain, for the cluster
// tests, which kill it, and the benchmarks, which measure its memory):
// "DSN\nblob directory", where the DSN is PostgreSQL's or sqlite:DIR, the
// data directory of a SQLite hub (its blob directory is then DIR's).
const EnvTestNode = "STATION_TEST_HUB_NODE"

// EnvTestNodeUnlimited, set to 1, lifts the node's rate limits and stream
// cap and quiets its heartbeat, for the benchmarks.
const EnvTestNodeUnlimited = "STATION_TEST_HUB_NODE_UNLIMITED"

// runTestNode serves a hub node on the PostgreSQL database and blob
// directory EnvTestNode names, printing its address as its first line of
// output, until the process is killed; it exits the process on failure.
func runTestNode(spec string) {
	dsn, blobs, _ := strings.Cut(spec, "\n")
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "hub node:", err)
		os.Exit(1)
	}
	var st Store
	var b Blobs
	var err error
	if dir, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		st, b, err = OpenDir(dir)
	} else if st, err = OpenPostgres(context.Background(), dsn); err == nil {
		b, err = OpenBlobDir(blobs)
	}
	if err != nil {
		fail(err)
	}
	o := Options{Store: st, Blobs: b}
	if os.Getenv(EnvTestNodeUnlimited) == "1" {
		o.Limits.RatePerSecond, o.Limits.Burst, o.Limits.MaxStreams = 1e9, 1e9, 1<<20
		o.Heartbeat = time.Hour
	}
	srv, err := New(o)
	if err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	fmt.Println(ln.Addr())
	fail(srv.Serve(context.Background(), ln))
}
