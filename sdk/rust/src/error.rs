//! Statuses, the errors of host calls, and the error a command returns.

use std::fmt;

use crate::json::{self, Value};

/// The outcome of a host call (docs/abi.md, "Statuses"). The codes are
/// stable; a later station may add some, which arrive as `Unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// 0: success.
    Ok,
    /// 1: a gate refused the operation: a sandbox violation, recorded in the
    /// audit log.
    Denied,
    /// 2: a pointer or length is outside module memory.
    Fault,
    /// 3: an argument is malformed.
    Invalid,
    /// 4: an argument or a result exceeds its limit.
    TooLarge,
    /// 5: the operation was allowed but failed.
    Failed,
    /// 6: the call's deadline passed.
    Timeout,
    /// 7: no call is active.
    Unavailable,
    /// A code this SDK does not know; treat it as `Failed`.
    Unknown(i32),
}

impl Status {
    /// The status of ABI code `code`.
    pub fn from_code(code: i32) -> Status {
        match code {
            0 => Status::Ok,
            1 => Status::Denied,
            2 => Status::Fault,
            3 => Status::Invalid,
            4 => Status::TooLarge,
            5 => Status::Failed,
            6 => Status::Timeout,
            7 => Status::Unavailable,
            c => Status::Unknown(c),
        }
    }

    /// The ABI code.
    pub fn code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::Denied => 1,
            Status::Fault => 2,
            Status::Invalid => 3,
            Status::TooLarge => 4,
            Status::Failed => 5,
            Status::Timeout => 6,
            Status::Unavailable => 7,
            Status::Unknown(c) => c,
        }
    }

    /// The wire name, as in an Error document's `code`: `ok`, `denied`,
    /// `fault`, `invalid`, `too_large`, `failed`, `timeout`, `unavailable`,
    /// or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Denied => "denied",
            Status::Fault => "fault",
            Status::Invalid => "invalid",
            Status::TooLarge => "too_large",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Unavailable => "unavailable",
            Status::Unknown(_) => "unknown",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed host call: its status and the station's Error document
/// (docs/abi.md, "Error").
///
/// ```no_run
/// match station::http::get("https://evil.example/") {
///     Err(e) if e.is_denied() => station::log::warn(&format!("refused: {}", e.reason)),
///     Err(e) => station::log::error(&e.message),
///     Ok(resp) => station::log::info(&format!("status {}", resp.status)),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError {
    /// The host call's status, never `Status::Ok`.
    pub status: Status,
    /// The status's name, as the station sent it: `denied`, `failed`, ...
    pub code: String,
    /// For denials and limits: `network`, `subprocess`, `llm`, `host`.
    pub capability: String,
    /// For denials and limits: what was refused, sanitized.
    pub target: String,
    /// For denials: why; for limits: which limit.
    pub reason: String,
    /// One line for humans; never empty.
    pub message: String,
}

impl HostError {
    /// The error of a host call that returned status `status` and the
    /// Error document `doc`. A missing or malformed document (or one
    /// without a message) yields an error built from the status alone.
    pub fn from_document(status: Status, doc: Option<&[u8]>) -> HostError {
        if let Some(e) = doc.and_then(|d| Self::parse(status, d)) {
            return e;
        }
        HostError::new(status, format!("station: host call failed: {}", status))
    }

    /// An error with status `status` and message `message` and no other
    /// details.
    pub fn new(status: Status, message: impl Into<String>) -> HostError {
        HostError {
            status,
            code: status.name().to_owned(),
            capability: String::new(),
            target: String::new(),
            reason: String::new(),
            message: message.into(),
        }
    }

    fn parse(status: Status, doc: &[u8]) -> Option<HostError> {
        let v = json::parse(doc).ok()?;
        let o = v.as_object()?;
        // As Go's encoding/json: a field of another type spoils the
        // document, null is an empty string, unknown fields are ignored.
        let field = |k: &str| -> Option<String> {
            match o.get(k) {
                None | Some(Value::Null) => Some(String::new()),
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => None,
            }
        };
        let mut e = HostError {
            status,
            code: field("code")?,
            capability: field("capability")?,
            target: field("target")?,
            reason: field("reason")?,
            message: field("message")?,
        };
        if e.message.is_empty() {
            return None;
        }
        if e.code.is_empty() {
            e.code = status.name().to_owned();
        }
        Some(e)
    }

    /// Reports whether a gate refused the operation (a sandbox violation),
    /// rather than an allowed operation failing.
    pub fn is_denied(&self) -> bool {
        self.status == Status::Denied
    }
}

/// The station's message.
impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

/// The error of a command: its message is what the caller sees.
///
/// Any [`std::error::Error`] converts into it (so `?` works on a
/// [`HostError`], a [`json::ParseError`], a `std::str::Utf8Error`, ...), and
/// [`Error::new`] makes one from a message:
///
/// ```
/// fn check(name: &str) -> Result<(), station::Error> {
///     if name.is_empty() {
///         return Err(station::Error::new("name is required"));
///     }
///     Ok(())
/// }
/// ```
///
/// A handler may return any error type that implements `Display`
/// (`String`, `Box<dyn std::error::Error>`, ...); this one is for
/// convenience.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with message `message`.
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(e: E) -> Error {
        Error::new(e.to_string())
    }
}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}

/// A message error for handlers that return `Box<dyn std::error::Error>`.
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

impl From<Error> for Box<dyn std::error::Error> {
    fn from(e: Error) -> Self {
        Box::new(Message(e.message))
    }
}

impl From<Error> for Box<dyn std::error::Error + Send + Sync> {
    fn from(e: Error) -> Self {
        Box::new(Message(e.message))
    }
}

/// Returns early from a handler with an [`Error`] made like `format!`:
///
/// ```
/// fn check(n: i64) -> Result<(), station::Error> {
///     if n < 0 {
///         station::bail!("n must not be negative, got {}", n);
///     }
///     Ok(())
/// }
/// ```
#[macro_export]
macro_rules! bail {
    ($($arg:tt)+) => {
        return ::std::result::Result::Err($crate::Error::new(::std::format!($($arg)+)).into())
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_document() {
        let e = HostError::from_document(
            Status::Denied,
            Some(br#"{"code":"denied","capability":"network","target":"x:443","reason":"r","message":"m","extra":1}"#),
        );
        assert!(e.is_denied());
        assert_eq!(
            (
                e.capability.as_str(),
                e.target.as_str(),
                e.reason.as_str(),
                e.to_string().as_str()
            ),
            ("network", "x:443", "r", "m")
        );
        let e = HostError::from_document(Status::Fault, Some(br#"{"message":"m"}"#));
        assert_eq!((e.code.as_str(), e.message.as_str()), ("fault", "m"));
        for doc in [
            None,
            Some(&b""[..]),
            Some(b"{"),
            Some(br#"{"code":"invalid"}"#),
            Some(br#"{"message":5}"#),
            Some(b"[]"),
        ] {
            let e = HostError::from_document(Status::Timeout, doc);
            assert_eq!(
                (e.code.as_str(), e.message.as_str()),
                ("timeout", "station: host call failed: timeout")
            );
        }
        let e = HostError::from_document(Status::from_code(99), None);
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("unknown", "station: host call failed: unknown")
        );
        assert!(!e.is_denied());
    }
}
