package fsgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// InstantiateWASI instantiates wazero's WASI preview 1 functions into r,
// as wasi_snapshot_preview1.Instantiate does, except that the functions
// that take a path let the gate decide on every path. wazero's WASI layer
// refuses, before any file system sees them, the paths that are absolute,
// that lead out of their directory descriptor with "..", or that are not
// valid UTF-8 (EPERM, recorded nowhere). Here such a path on a directory
// of a file system from Gate.FS is refused by the gate instead, as any
// other path it does not allow: recorded as a denial of the module, EACCES
// for a read, EPERM for a change. Every other call is wazero's own.
func InstantiateWASI(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	defs, err := wasiDefinitions(ctx, r)
	if err != nil {
		return nil, err
	}
	b := r.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	for _, w := range pathFuncs {
		def, ok := defs[w.name]
		if !ok {
			return nil, fmt.Errorf("fsgate: wasi: no function %s", w.name)
		}
		orig, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return nil, fmt.Errorf("fsgate: wasi: function %s is not a Go module function", w.name)
		}
		f := &pathFunc{orig: orig, paths: w.paths, kind: w.kind}
		b.NewFunctionBuilder().
			WithGoModuleFunction(f, def.ParamTypes(), def.ResultTypes()).
			WithParameterNames(def.ParamNames()...).
			WithResultNames(def.ResultNames()...).
			Export(w.name)
	}
	// fd_renumber grows wazero's descriptor table up to its target, in host
	// memory outside the module's limit: a target past any budget is
	// refused as a descriptor that cannot exist.
	def, ok := defs["fd_renumber"]
	if !ok {
		return nil, errors.New("fsgate: wasi: no function fd_renumber")
	}
	orig, ok := def.GoFunction().(api.GoModuleFunction)
	if !ok {
		return nil, errors.New("fsgate: wasi: function fd_renumber is not a Go module function")
	}
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			if uint32(stack[1]) > MaxDescriptor {
				stack[0] = wasiEBADF
				return
			}
			orig.Call(ctx, mod, stack)
		}), def.ParamTypes(), def.ResultTypes()).
		WithParameterNames(def.ParamNames()...).
		WithResultNames(def.ResultNames()...).
		Export("fd_renumber")
	return b.Instantiate(ctx)
}

// MaxDescriptor is the largest descriptor number fd_renumber may move a
// descriptor to: above every open-file budget, and small enough that the
// table wazero grows to reach it stays small (about 8 bytes a slot).
const MaxDescriptor = 1 << 16

// wasiDefinitions returns wazero's own WASI functions by name.
func wasiDefinitions(ctx context.Context, r wazero.Runtime) (map[string]api.FunctionDefinition, error) {
	b := r.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	c, err := b.Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("fsgate: wasi: %w", err)
	}
	defer c.Close(ctx)
	return c.ExportedFunctions(), nil
}

// pathArg is where a path argument of a WASI function is: the indexes in
// its parameters of the directory descriptor, the path's address and its
// length.
type pathArg struct{ fd, ptr, len int }

// pathFuncs are the WASI functions that resolve a path against a directory
// descriptor, with what each needs of the path (see kind). path_symlink's
// first path is the link's target, which is not resolved.
var pathFuncs = []struct {
	name  string
	paths []pathArg
	kind  func(params []uint64) kind
}{
	{"path_create_directory", []pathArg{{0, 1, 2}}, changes},
	{"path_filestat_get", []pathArg{{0, 2, 3}}, func([]uint64) kind { return kindSee }},
	{"path_filestat_set_times", []pathArg{{0, 2, 3}}, changes},
	{"path_link", []pathArg{{0, 2, 3}, {4, 5, 6}}, changes},
	{"path_open", []pathArg{{0, 2, 3}}, openParams},
	{"path_readlink", []pathArg{{0, 1, 2}}, func([]uint64) kind { return kindRead }},
	{"path_remove_directory", []pathArg{{0, 1, 2}}, changes},
	{"path_rename", []pathArg{{0, 1, 2}, {3, 4, 5}}, changes},
	{"path_symlink", []pathArg{{2, 3, 4}}, changes},
	{"path_unlink_file", []pathArg{{0, 1, 2}}, changes},
}

func changes([]uint64) kind { return kindWrite }

// openParams is what path_open needs, decided as wazero turns its oflags,
// rights and fdflags into an Oflag (a write for O_CREAT, O_TRUNC, O_EXCL,
// FD_APPEND or the right to write).
func openParams(params []uint64) kind {
	const (
		oCreat, oDirectory, oExcl, oTrunc = 1, 2, 4, 8
		fdAppend                          = 1
		rightWrite                        = 1 << 6
	)
	oflags, rights, fdflags := uint16(params[4]), params[5], uint16(params[7])
	switch {
	case oflags&(oCreat|oTrunc) != 0, oflags&(oExcl|oDirectory) == oExcl,
		fdflags&fdAppend != 0, rights&rightWrite != 0:
		return kindWrite
	}
	return kindList
}

// pathFunc is a WASI function with path arguments: a path that wazero's
// WASI layer would refuse is refused by the gate, every other call goes to
// wazero's function.
type pathFunc struct {
	orig  api.GoModuleFunction
	paths []pathArg
	kind  func(params []uint64) kind
}

// Call implements api.GoModuleFunction.
func (f *pathFunc) Call(ctx context.Context, mod api.Module, stack []uint64) {
	var params [8]uint64 // the stack holds the results after the call
	copy(params[:], stack)
	if mem := mod.Memory(); mem != nil {
		for _, p := range f.paths {
			raw, ok := mem.Read(uint32(stack[p.ptr]), uint32(stack[p.len]))
			if !ok {
				break // wazero answers EFAULT
			}
			reason := runtimeRefuses(raw)
			if reason == "" {
				continue
			}
			if e, ok := refuse(mod, int32(stack[p.fd]), raw, f.kind(stack), reason); ok {
				stack[0] = uint64(wasiErrno(e))
				return
			}
			break
		}
	}
	f.orig.Call(ctx, mod, stack)
	if uint32(stack[0]) == wasiEIO && len(f.paths) > 0 {
		// Perhaps a refusal over a limit, which wazero turned into EIO:
		// answer the error number the gate meant.
		if fsys, _, _, ok := dirEntry(mod, int32(params[f.paths[0].fd])); ok {
			if l, ok := fsys.(limiter); ok {
				if n, ok := l.limitErrno(); ok {
					stack[0] = uint64(n)
				}
			}
		}
	}
}

// limiter is the gate's file system: it tells the WASI error number of a
// refusal over a limit that wazero could only answer as EIO.
type limiter interface {
	limitErrno() (uint32, bool)
}

// runtimeRefuses returns why wazero's WASI layer refuses the path p before
// any file system sees it ("" if it does not): it refuses what
// fs.ValidPath(path.Clean(p)) refuses.
func runtimeRefuses(p []byte) string {
	switch {
	case !utf8.Valid(p):
		return "is not valid UTF-8"
	case len(p) > 0 && p[0] == '/':
		return "is an absolute path; a WASI path is relative to its directory descriptor"
	case !bytes.Contains(p, []byte("..")):
		return ""
	}
	if c := path.Clean(string(p)); c == ".." || strings.HasPrefix(c, "../") {
		return `leads out of its directory descriptor with ".."`
	}
	return ""
}

// refuser is the gate's file system: it refuses, for the directory dir of
// the guest, the raw path wazero's WASI layer does not pass on.
type refuser interface {
	refuseRaw(dir string, raw []byte, k kind, reason string) errno
}

// refuse lets the gate refuse raw, a path relative to the directory
// descriptor fd of mod. ok is false if fd is not a directory of a gate's
// file system; wazero answers then.
func refuse(mod api.Module, fd int32, raw []byte, k kind, reason string) (e errno, ok bool) {
	fsys, name, isDir, ok := dirEntry(mod, fd)
	if !ok || !isDir {
		return 0, false
	}
	r, ok := fsys.(refuser)
	if !ok {
		return 0, false
	}
	return r.refuseRaw(name, raw, k, reason), true
}

// dirEntry looks up the descriptor fd in the file table of the guest mod:
// its file system, the guest path of the directory ("/" + its name
// relative to the file system's root), and whether it is a directory.
//
// wazero's descriptor table is internal to it; its exported fields and
// methods are read with reflection (mod.Sys.FS().LookupFile(fd)), only for
// a path that wazero would refuse anyway. If wazero changes that shape,
// ok is false and wazero refuses the path itself, unrecorded (never
// allowed); TestWASIWrapper, which needs no wasm toolchain and runs under
// -short, fails then, as does TestGuestView.
func dirEntry(mod api.Module, fd int32) (fsys experimentalsys.FS, name string, isDir, ok bool) {
	defer func() {
		if recover() != nil {
			fsys, ok = nil, false
		}
	}()
	v := reflect.ValueOf(mod)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, "", false, false
	}
	sys := v.Elem().FieldByName("Sys")
	if !sys.IsValid() || sys.Kind() != reflect.Pointer || sys.IsNil() {
		return nil, "", false, false
	}
	fsc := sys.MethodByName("FS").Call(nil)[0]
	out := fsc.MethodByName("LookupFile").Call([]reflect.Value{reflect.ValueOf(fd)})
	if !out[1].Bool() || out[0].IsNil() {
		return nil, "", false, false
	}
	entry := out[0].Elem()
	fsys, _ = entry.FieldByName("FS").Interface().(experimentalsys.FS)
	file, _ := entry.FieldByName("File").Interface().(experimentalsys.File)
	if fsys == nil || file == nil {
		return nil, "", false, false
	}
	name = entry.FieldByName("Name").String()
	if entry.FieldByName("IsPreopen").Bool() {
		name = "/" // the gate's file system is only ever linked at "/"
	} else {
		name = "/" + strings.Trim(name, "/")
	}
	d, e := file.IsDir()
	return fsys, name, d && e == 0, true
}

// wasiErrno is the WASI error number of a denial by refuseRaw, which
// answers EACCES (a read) or EPERM (a change).
func wasiErrno(e errno) uint32 {
	switch e {
	case experimentalsys.EACCES:
		return 2
	case experimentalsys.EPERM:
		return 63
	}
	return 29 // EIO, as wazero maps what it does not know
}
