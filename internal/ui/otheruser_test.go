package ui_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// nobody is the uid and gid the tests act as when they play another user
// of the machine.
const nobody = 65534

// TestMain lets the test binary act as another local user: started by
// asOtherUser with STATION_UI_TEST_OTHER set, it makes one request and
// prints its status.
func TestMain(m *testing.M) {
	if spec := os.Getenv("STATION_UI_TEST_OTHER"); spec != "" {
		method, rest, _ := strings.Cut(spec, " ")
		target, cookie, _ := strings.Cut(rest, " ")
		req, err := http.NewRequest(method, target, strings.NewReader(os.Getenv("STATION_UI_TEST_BODY")))
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		io.Copy(io.Discard, resp.Body)
		fmt.Println(resp.StatusCode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// asOtherUser makes one request as uid nobody — another user of this
// machine, who can reach 127.0.0.1 but cannot read the station user's
// files — and returns the status. It needs root to become that user; an
// unprivileged run skips (the root pass of CI runs it).
func asOtherUser(t *testing.T, method, url, cookie, body string) int {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("acting as another user needs root (CI's root pass runs this)")
	}
	// The test binary, where that user may run it.
	dir, err := os.MkdirTemp("", "station-ui-other-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ui.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"STATION_UI_TEST_OTHER=" + method + " " + url + " " + cookie, "STATION_UI_TEST_BODY=" + body}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("as uid %d: %s", nobody, out)
	}
	return code
}
