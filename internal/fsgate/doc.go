// Package fsgate is the filesystem gate of the module sandbox: the one path
// through which a module's file operations reach the host's files.
//
// A Gate is built for one module when the module is linked. It binds the
// module id, the module's write and read globs, the operator's protected
// directories, the audit Recorder and the disk quota; nothing is looked up
// later from process-global state. FS returns, for each wazero instance of
// the module, the file system to link as the guest's only preopened
// directory, "/" (sysfs.FSConfig.WithSysFSMount(fsys, "/")), and
// InstantiateWASI links wazero's WASI functions so that every path the
// guest names reaches it. It implements experimentalsys.FS over the gate, so
// a guest uses ordinary file APIs (Go's os package over WASI) and every
// operation it makes is decided here. See docs/filesystem.md for the design
// and the reasons behind it.
//
// # Globs and mounts
//
// Globs are absolute host paths in doublestar syntax ("*" is one path
// segment, "**" any depth, "{a,b}" alternatives, no escapes); "~/" must be
// expanded by the caller. Everything writable is readable. A glob's mount
// root is its longest leading directory without glob characters
// ("/home/u/out/**" → /home/u/out, "/data/*.csv" → /data,
// "/home/u/notes/todo.txt" → /home/u/notes); roots inside other roots
// collapse into the outer one. New refuses a root that does not exist (the
// operator creates it), that is not a directory, that is "/", or that is,
// contains or is inside an Options.Protected directory. A module without
// globs gets no file system at all.
//
// # The guest's view
//
// The guest sees one directory tree, "/", in which every path is the host
// path of the same name. The gate resolves each path itself ("." and ".."
// lexically, ".." stopping at "/") and hands it, on segment boundaries, to
// the mount root it is in: /home/u/outside.txt is never inside the mount
// /home/u/out. "/" and the directories above the mount roots exist only as
// the way to them: they list the names on that way, and stat shows a bare
// directory (mode 0555, inode made up, nothing of the host's). Everything
// else outside the mounts does not exist for the module, as a hidden name
// inside a mount does not. The guest's working directory is "/".
//
// wazero's WASI layer refuses some paths before any file system sees them:
// absolute ones, ones leading out of their directory descriptor with "..",
// and ones that are not valid UTF-8. InstantiateWASI hands those to the gate
// instead, which denies them as any other path it does not allow.
//
// # Decisions
//
// Inside a mount, the gate resolves each path itself, one directory at a
// time and never following a symbolic link implicitly (openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS from the root's descriptor, or openat
// with O_NOFOLLOW per element). A link on the way, or at the end of an
// operation that follows links, is followed only if its target is relative
// and stays inside the mount; the path through it is then decided again,
// from the start. So every decision is made on the clean path that the
// operation then touches, through a directory descriptor reached without
// links, and the last element is used with O_NOFOLLOW (or the equivalent):
// nothing is resolved again after it was decided.
//
//   - Changes need the resolved path to match a write glob: opening with
//     write access or with O_APPEND, O_CREAT, O_TRUNC or O_EXCL, mkdir,
//     rmdir, unlink, rename (both ends), link (both ends), symlink (the
//     link's path; its target must stay inside the mount), chmod, set-times
//     by path, and set-size or set-times through a descriptor (which must
//     have been opened for writing). A directory may only be renamed between
//     places where everything below it is writable ("X/**"). A regular file
//     with more than one hard link is never opened for writing, truncated,
//     linked again, chmod-ed or given new times: its other names may be
//     outside the allowlist. The mount root itself cannot be removed or
//     renamed.
//   - Reading a file or a link needs the path to match a read or write glob.
//     A directory above a granted path (say /data/2024 for
//     /data/*/report.csv) may be stat-ed, opened and listed so that the
//     guest can walk to its files, but a listing shows only entries the
//     module may see; anything else does not exist for the module, not even
//     for stat.
//   - readlink shows a link's target only if every path the target names on
//     the way (resolved lexically from the link's directory, or from "/")
//     is one the module may see; otherwise it is refused (EACCES), and
//     lstat shows the link with size 0: the guest learns nothing of host
//     paths outside its grants, nor of hidden names inside a mount.
//   - A trailing slash means what the system call makes of it: "name/" must
//     be a directory. For unlink, rmdir, rename, link's new name, symlink
//     and mkdir the slash is passed to the system call at the last element,
//     where it never follows a link; for open, stat, lstat, readlink,
//     chmod, set-times and link's old name the gate follows a link at the
//     last element first, as the kernel does, and then requires a
//     directory.
//   - Only regular files and directories are opened: FIFOs, devices and
//     sockets are refused (and never opened).
//   - Paths with a NUL byte, longer than 4095 bytes, or with a name longer
//     than 255 bytes are refused.
//
// Every denial and every allowed change goes to the Recorder as a
// sandbox.Decision (capability filesystem, target the sanitized host path,
// "from -> to" for rename and link); allowed reads are not recorded, so
// reading stays cheap, and individual writes to a descriptor are covered by
// the decision that opened it. A denial is also passed to Hooks.Denied and
// reaches the guest as EPERM (a change) or EACCES (a read); a change through
// a descriptor not opened for writing gets EBADF, as the system call would.
//
// # Quota
//
// Options.QuotaBytes (default 256 MiB) bounds the bytes by which the
// module's files grow, over all its instances: writes and size changes
// add, truncations, unlinks and renames over a file subtract. A write that
// would exceed it fails whole with EPERM (wazero has no ENOSPC) and a
// denial "would exceed its disk quota of ...".
package fsgate
