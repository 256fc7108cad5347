//! The station's imports (module `station`, docs/abi.md) and safe wrappers
//! that own the buffer protocol. This is the only module with `unsafe`.
//!
//! Off wasm32 there is no station: the wrappers answer as the imports do
//! when no call is active (`unavailable`), except that log lines go to
//! standard error, so that a module's handlers can be unit-tested natively.

use crate::Status;

#[cfg(target_arch = "wasm32")]
mod imports {
    #[link(wasm_import_module = "station")]
    extern "C" {
        pub fn buf_len(handle: i32) -> i32;
        pub fn buf_read(handle: i32, ptr: *mut u8, len: i32) -> i32;
        pub fn buf_free(handle: i32);
        pub fn output_set(ptr: *const u8, len: i32) -> i32;
        pub fn log(level: i32, ptr: *const u8, len: i32) -> i32;
        pub fn http_request(ptr: *const u8, len: i32) -> i64;
    }
}

/// The length of b as the ABI's i32. A slice is never longer than
/// isize::MAX bytes, which is i32::MAX on wasm32.
#[cfg(target_arch = "wasm32")]
fn len32(b: &[u8]) -> i32 {
    i32::try_from(b.len()).unwrap_or(i32::MAX)
}

/// The status of an i32 import result: a count or 0 on success, a negated
/// status on failure.
#[cfg(target_arch = "wasm32")]
fn status(r: i32) -> Result<usize, Status> {
    if r < 0 {
        Err(Status::from_code(r.wrapping_neg()))
    } else {
        Ok(r as usize)
    }
}

/// Copies buffer `handle` into a new vector and frees it. Handle 0 is the
/// empty buffer; a handle that is not live is `Status::Invalid`.
#[cfg(target_arch = "wasm32")]
pub(crate) fn read_buffer(handle: i32) -> Result<Vec<u8>, Status> {
    if handle == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: buf_len only reads its argument.
    let n = unsafe { imports::buf_len(handle) };
    if n < 0 {
        return Err(Status::Invalid);
    }
    let mut b = vec![0u8; n as usize];
    // SAFETY: [ptr, ptr+n) is b's initialized, exclusively borrowed memory;
    // the station writes at most n bytes there and nothing after it
    // returns.
    let r = unsafe { imports::buf_read(handle, b.as_mut_ptr(), n) };
    match status(r) {
        Ok(got) => {
            b.truncate(got);
            Ok(b)
        }
        Err(s) => {
            free_buffer(handle);
            Err(s)
        }
    }
}

/// Frees buffer `handle`; 0 and unknown handles are ignored.
#[cfg(target_arch = "wasm32")]
pub(crate) fn free_buffer(handle: i32) {
    if handle != 0 {
        // SAFETY: buf_free only reads its argument.
        unsafe { imports::buf_free(handle) }
    }
}

/// Sets the current call's output.
#[cfg(target_arch = "wasm32")]
pub(crate) fn set_output(b: &[u8]) -> Result<(), Status> {
    // SAFETY: the station reads [ptr, ptr+len) of a live slice, during the
    // call only.
    status(unsafe { imports::output_set(b.as_ptr(), len32(b)) }).map(drop)
}

/// Writes one line to the module log.
#[cfg(target_arch = "wasm32")]
pub(crate) fn log(level: i32, line: &[u8]) -> Result<(), Status> {
    // SAFETY: as in set_output.
    status(unsafe { imports::log(level, line.as_ptr(), len32(line)) }).map(drop)
}

/// Performs an HTTPRequest document; returns the status and the document
/// the station answered with (None when it returned no buffer).
#[cfg(target_arch = "wasm32")]
pub(crate) fn http_request(doc: &[u8]) -> (Status, Option<Vec<u8>>) {
    // SAFETY: as in set_output.
    let r = unsafe { imports::http_request(doc.as_ptr(), len32(doc)) };
    answer(r)
}

/// Unpacks a packed host call result (status << 32 | handle) and reads its
/// buffer.
#[cfg(target_arch = "wasm32")]
fn answer(r: i64) -> (Status, Option<Vec<u8>>) {
    let s = Status::from_code((r >> 32) as i32);
    let handle = r as u32 as i32;
    if handle == 0 {
        return (s, None);
    }
    match read_buffer(handle) {
        Ok(b) => (s, Some(b)),
        Err(rs) if s == Status::Ok => (rs, None),
        Err(_) => (s, None),
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn read_buffer(_handle: i32) -> Result<Vec<u8>, Status> {
    Err(Status::Unavailable)
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn free_buffer(_handle: i32) {}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn set_output(_b: &[u8]) -> Result<(), Status> {
    Err(Status::Unavailable)
}

/// Outside the station there is no module log: the line goes to standard
/// error, after its level's name.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn log(level: i32, line: &[u8]) -> Result<(), Status> {
    use std::io::Write;
    let name = match level {
        0 => "DEBUG",
        2 => "WARN",
        3 => "ERROR",
        _ => "INFO",
    };
    let mut b = Vec::with_capacity(line.len() + 8);
    b.extend_from_slice(name.as_bytes());
    b.push(b' ');
    b.extend_from_slice(line);
    b.push(b'\n');
    let _ = std::io::stderr().write_all(&b);
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn http_request(_doc: &[u8]) -> (Status, Option<Vec<u8>>) {
    (Status::Unavailable, None)
}
