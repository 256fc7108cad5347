package fsgate

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// openerWasm is a module that exports "open", which calls WASI's
// path_open with its own arguments, and has one page of memory: a guest
// that names raw paths without a Go toolchain for wasip1.
func openerWasm() []byte {
	section := func(id byte, content ...byte) []byte {
		return append([]byte{id, byte(len(content))}, content...) // every section is < 128 bytes
	}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	// (fd, dirflags, path, path_len, oflags, rights, rights_inheriting, fdflags, result_fd) -> errno
	typ := []byte{0x60, 9, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7e, 0x7e, 0x7f, 0x7f, 1, 0x7f}
	body := []byte{0} // no locals
	for i := range byte(9) {
		body = append(body, 0x20, i) // local.get i
	}
	body = append(body, 0x10, 0, 0x0b) // call 0 (the import), end
	return cat(
		[]byte("\x00asm\x01\x00\x00\x00"),
		section(1, cat([]byte{1}, typ)...),
		section(2, cat([]byte{1}, name("wasi_snapshot_preview1"), name("path_open"), []byte{0, 0})...),
		section(3, 1, 0),
		section(5, 1, 0, 1),
		section(7, cat([]byte{1}, name("open"), []byte{0, 1})...),
		section(10, cat([]byte{1, byte(len(body))}, body)...),
	)
}

// InstantiateWASI's wrapper, against wazero's own descriptor table and
// without building a Go guest (so also under -short): a path that wazero's
// WASI layer refuses, on the preopen or on a directory opened from it, is
// a recorded denial of the gate with EACCES or EPERM; on a descriptor that
// is not a directory of the gate wazero answers itself; an ordinary path
// goes through to wazero's path_open and the gate. If the wrapper no longer
// finds the directory (wazero changed its descriptor table, which dirEntry
// reads by reflection), wazero refuses such paths unrecorded, and this test
// fails.
func TestWASIWrapper(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	tree(t, base, map[string]string{"m/out/a.txt": "a", "secret.txt": "s"})
	e := newEnv(t, base, []string{"$T/m/out/**"}, nil, 0)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := InstantiateWASI(ctx, r); err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateWithConfig(ctx, openerWasm(), wazero.NewModuleConfig().WithFSConfig(gateConfig(t, e)))
	if err != nil {
		t.Fatal(err)
	}
	const (
		oCreat, oDirectory    = 1, 2
		errnoAcces, errnoPerm = 2, 63
		resultAt, pathAt      = 0, 64
	)
	open := func(fd uint32, p string, oflags uint64) (uint32, uint64) {
		t.Helper()
		if !mod.Memory().Write(pathAt, []byte(p)) {
			t.Fatal("path does not fit")
		}
		res, err := mod.ExportedFunction("open").Call(ctx, uint64(fd), 0, pathAt, uint64(len(p)), oflags, 0, 0, 0, resultAt)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := mod.Memory().Read(resultAt, 4)
		return uint32(res[0]), uint64(binary.LittleEndian.Uint32(b))
	}
	T := strings.TrimPrefix(base, "/")
	_, dir := open(3, T+"/m/out", oDirectory)
	_, file := open(3, T+"/m/out/a.txt", 0)
	if dir < 4 || file < 4 || dir == file {
		t.Fatalf("opened descriptors %d and %d", dir, file)
	}
	const dotdot = `leads out of its directory descriptor with ".."`
	for _, c := range []struct {
		name   string
		fd     uint32
		path   string
		oflags uint64
		want   uint32
		deny   string // the one denial recorded, base written as $T; "" for none
	}{
		{"dotdot on the preopen", 3, "../etc/passwd", 0, errnoAcces, "/../etc/passwd: " + dotdot},
		{"absolute on the preopen, creating", 3, "/etc/passwd", oCreat, errnoPerm,
			"/etc/passwd: is an absolute path; a WASI path is relative to its directory descriptor"},
		{"not UTF-8 on the preopen", 3, "\xffx", 0, errnoAcces, `/\xffx: is not valid UTF-8`},
		{"dotdot on an opened directory", uint32(dir), "../../secret.txt", 0, errnoAcces, "$T/m/out/../../secret.txt: " + dotdot},
		{"dotdot on an opened directory, creating", uint32(dir), "../x", oCreat, errnoPerm, "$T/m/out/../x: " + dotdot},
		{"dotdot on a file", uint32(file), "../x", 0, errnoPerm, ""},
		{"dotdot on no descriptor", 99, "../x", 0, errnoPerm, ""}, // wazero looks at the path first
		{"an ordinary path on an opened directory", uint32(dir), "a.txt", 0, 0, ""},
		{"an ordinary path outside the grant", 3, T + "/secret.txt", 0, errnoAcces,
			"$T/secret.txt: is not in its read allowlist ($T/m/out/**)"},
	} {
		e.rec.Reset()
		if got, _ := open(c.fd, c.path, c.oflags); got != c.want {
			t.Errorf("%s: errno %d, want %d", c.name, got, c.want)
		}
		got := strings.TrimSpace(strings.TrimPrefix(summary(e.rec, base), "deny "))
		if got != c.deny {
			t.Errorf("%s: decisions %q, want %q", c.name, got, c.deny)
		}
	}
}
