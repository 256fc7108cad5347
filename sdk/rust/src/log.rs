//! The station's module log: each line is stamped with the time, the module
//! and the command by the station.
//!
//! ```no_run
//! station::log::info("fetching the invoice");
//! station::log::warn(&format!("retrying after status {}", 503));
//! ```
//!
//! A line longer than [`MAX_LINE`] is cut to fit and ends with `...`; the
//! station escapes control characters (a newline cannot forge a line).
//! Logging never fails a call: a line the station refuses is dropped.
//! Outside the station (off wasm32) lines go to standard error.

use crate::sys;

/// The longest line the SDK sends: the station's default limit.
pub const MAX_LINE: usize = 64 << 10;

/// The level of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Detail for debugging.
    Debug = 0,
    /// Normal operation.
    Info = 1,
    /// Something is wrong but the command goes on.
    Warn = 2,
    /// Something failed.
    Error = 3,
}

/// Writes `line` to the module log at `level`.
pub fn log(level: Level, line: &str) {
    let line = cut(line);
    let _ = sys::log(level as i32, line.as_bytes());
}

/// Writes `line` at level debug.
pub fn debug(line: &str) {
    log(Level::Debug, line)
}

/// Writes `line` at level info.
pub fn info(line: &str) {
    log(Level::Info, line)
}

/// Writes `line` at level warn.
pub fn warn(line: &str) {
    log(Level::Warn, line)
}

/// Writes `line` at level error.
pub fn error(line: &str) {
    log(Level::Error, line)
}

/// line, cut at a character boundary to at most MAX_LINE bytes ending with
/// "..." if it is longer.
fn cut(line: &str) -> std::borrow::Cow<'_, str> {
    if line.len() <= MAX_LINE {
        return line.into();
    }
    let mut n = MAX_LINE - 3;
    while !line.is_char_boundary(n) {
        n -= 1;
    }
    format!("{}...", &line[..n]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts() {
        assert_eq!(cut("short"), "short");
        let long = "é".repeat(MAX_LINE);
        let c = cut(&long);
        assert!(c.len() <= MAX_LINE && c.ends_with("é..."), "{}", c.len());
        let exact = "a".repeat(MAX_LINE);
        assert_eq!(cut(&exact).len(), MAX_LINE);
    }
}
