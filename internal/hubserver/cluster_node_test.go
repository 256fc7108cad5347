package hubserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
)

// EnvTestNode makes the test binary a hub node (TestMain, for the cluster
// tests, which kill it): "DSN\nblob directory".
const EnvTestNode = "STATION_TEST_HUB_NODE"

// runTestNode serves a hub node on the PostgreSQL database and blob
// directory EnvTestNode names, printing its address as its first line of
// output, until the process is killed; it exits the process on failure.
func runTestNode(spec string) {
	dsn, blobs, _ := strings.Cut(spec, "\n")
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "hub node:", err)
		os.Exit(1)
	}
	st, err := OpenPostgres(context.Background(), dsn)
	if err != nil {
		fail(err)
	}
	b, err := OpenBlobDir(blobs)
	if err != nil {
		fail(err)
	}
	srv, err := New(Options{Store: st, Blobs: b})
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
