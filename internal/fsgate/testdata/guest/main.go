// Command guest is the end-to-end test guest of package fsgate: a WASI
// reactor whose export run performs the file operations in its arguments,
// one per argument as "op|path|arg", and prints one line per operation:
// "op path: ok [result]" or "op path: error text". Relative paths are
// resolved from $PWD, or from the first preopened directory.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {}

//go:wasmexport run
func run() {
	for _, a := range os.Args[1:] {
		f := strings.SplitN(a, "|", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		op, p, arg := f[0], f[1], f[2]
		res, err := do(op, p, arg)
		if err != nil {
			fmt.Printf("%s %s: %v\n", op, p, err)
			continue
		}
		fmt.Printf("%s %s: ok%s\n", op, p, res)
	}
}

func do(op, p, arg string) (string, error) {
	switch op {
	case "write":
		return "", os.WriteFile(p, []byte(arg), 0o644)
	case "append":
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString(arg)
		return "", err
	case "read":
		b, err := os.ReadFile(p)
		return " " + strconv.Quote(string(b)), err
	case "truncopen":
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_TRUNC, 0)
		if err == nil {
			f.Close()
		}
		return "", err
	case "ftruncate":
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		defer f.Close()
		return "", f.Truncate(0)
	case "truncate":
		n, _ := strconv.ParseInt(arg, 10, 64)
		return "", os.Truncate(p, n)
	case "ls":
		es, err := os.ReadDir(p)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		slices.Sort(names)
		return " " + strings.Join(names, ","), err
	case "stat":
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(" %v %d", fi.Mode().Type(), fi.Size()), nil
	case "mkdir":
		return "", os.Mkdir(p, 0o755)
	case "mkdirall":
		return "", os.MkdirAll(p, 0o755)
	case "rm":
		return "", os.Remove(p)
	case "rename":
		return "", os.Rename(p, arg)
	case "symlink":
		return "", os.Symlink(arg, p)
	case "link":
		return "", os.Link(arg, p)
	case "readlink":
		s, err := os.Readlink(p)
		return " " + s, err
	case "chmod":
		return "", os.Chmod(p, 0o600)
	case "chtimes":
		t := time.Unix(1e9, 0)
		return "", os.Chtimes(p, t, t)
	case "openat": // relative to a directory descriptor, as C guests do
		d, err := os.Open(p)
		if err != nil {
			return "", err
		}
		defer d.Close()
		fd, err := syscall.Openat(int(d.Fd()), arg, syscall.O_RDONLY, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return "", err
	case "openatw": // as openat, creating for writing
		d, err := os.Open(p)
		if err != nil {
			return "", err
		}
		defer d.Close()
		fd, err := syscall.Openat(int(d.Fd()), arg, syscall.O_WRONLY|syscall.O_CREAT, 0o644)
		if err == nil {
			syscall.Close(fd)
		}
		return "", err
	case "chdir":
		return "", os.Chdir(p)

	// Single system calls, so that errno is the call's own (os.Remove, for
	// one, tries unlink and then rmdir).
	case "unlink":
		return "", syscall.Unlink(p)
	case "rmdir":
		return "", syscall.Rmdir(p)
	case "srename":
		return "", syscall.Rename(p, arg)
	case "lstat":
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(" %v", fi.Mode().Type()), nil
	case "open":
		f, err := os.Open(p)
		if err == nil {
			f.Close()
		}
		return "", err
	case "opennf": // open(O_RDONLY|O_NOFOLLOW)
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return "", err
	case "create": // open(O_WRONLY|O_CREAT|O_TRUNC)
		fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
		if err == nil {
			syscall.Close(fd)
		}
		return "", err
	}
	return "", fmt.Errorf("unknown op %q", op)
}
