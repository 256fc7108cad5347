// Package pgtest finds a PostgreSQL server for tests and gives each test a
// database of its own, so that tests run in parallel.
//
// The server is, in order: the one STATION_TEST_POSTGRES names (a DSN, as
// libpq takes it, of a database the user may CREATE DATABASE from); one
// on 127.0.0.1:5432 that lets user postgres (or root) in without a
// password; or a throwaway cluster that initdb and pg_ctl (in PATH, or a
// Debian /usr/lib/postgresql/*/bin) create in a temporary directory, on a
// free port, for the rest of the test process (Stop removes it; a
// package's TestMain calls it). With none of them, a test that asks is
// skipped saying why, unless STATION_REQUIRE_POSTGRES=1 (as .ci/run sets):
// then it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variables pgtest reads.
const (
	EnvDSN     = "STATION_TEST_POSTGRES"
	EnvRequire = "STATION_REQUIRE_POSTGRES"
)

var (
	once    sync.Once
	baseDSN string // a database of the server to CREATE DATABASE from
	why     error  // why there is no server
	cluster string // the throwaway cluster's directory, if one was started
)

// DSN returns the DSN of a new, empty database for t, dropped (with its
// connections) when t ends. It skips t when no server is found (fails with
// STATION_REQUIRE_POSTGRES=1).
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(find)
	if why != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("PostgreSQL is required (%s=1) but none was found: %v", EnvRequire, why)
		}
		t.Skipf("no PostgreSQL for this test (%v); set %s to a DSN to run it", why, EnvDSN)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b [6]byte
	rand.Read(b[:])
	name := "station_test_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, baseDSN)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	// template0: nobody is ever connected to it, so databases are created
	// in parallel (template1 refuses while another session uses it).
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, baseDSN)
		if err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(baseDSN, name)
}

// Available reports whether a server was found, and why not.
func Available() error {
	once.Do(find)
	return why
}

// withDatabase returns dsn naming database name instead.
func withDatabase(dsn, name string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	return dsn + " dbname=" + name // a later keyword wins
}

func find() {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		if err := ping(dsn); err != nil {
			why = fmt.Errorf("%s does not connect: %w", EnvDSN, err)
			return
		}
		baseDSN = dsn
		return
	}
	var tried []string
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgres://root@127.0.0.1:5432/postgres?sslmode=disable",
	} {
		err := ping(dsn)
		if err == nil {
			baseDSN = dsn
			return
		}
		tried = append(tried, err.Error())
	}
	dsn, err := startCluster()
	if err == nil {
		baseDSN = dsn
		return
	}
	why = fmt.Errorf("nothing on 127.0.0.1:5432 (%s), and no throwaway cluster: %w", strings.Join(tried, "; "), err)
}

func ping(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// binary finds a PostgreSQL program in PATH or a Debian install.
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s is not installed", name)
}

// startCluster creates and starts a cluster in a temporary directory on
// a free loopback port, with trust authentication for user postgres.
func startCluster() (string, error) {
	initdb, err := binary("initdb")
	if err != nil {
		return "", err
	}
	pgctl, err := binary("pg_ctl")
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		return "", errors.New("initdb refuses to run as root (start PostgreSQL, or set " + EnvDSN + ")")
	}
	dir, err := os.MkdirTemp("", "station-pgtest-")
	if err != nil {
		return "", err
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off", port, dir)
	if out, err := exec.Command(pgctl, "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "start").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	cluster = dir
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := ping(dsn); err != nil {
		Stop()
		return "", err
	}
	return dsn, nil
}

// Stop stops and removes the throwaway cluster, if pgtest started one.
// A package whose tests use pgtest calls it from TestMain after m.Run.
func Stop() {
	if cluster == "" {
		return
	}
	if pgctl, err := binary("pg_ctl"); err == nil {
		exec.Command(pgctl, "-D", filepath.Join(cluster, "data"), "-m", "immediate", "-w", "stop").Run()
	}
	os.RemoveAll(cluster)
	cluster = ""
}
