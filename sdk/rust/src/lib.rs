//! The Rust SDK for Station modules: WebAssembly programs the station runs
//! confined by their manifests. It implements the guest ABI (docs/abi.md)
//! with nothing but std.
//!
//! A module is a `cdylib` crate that writes its commands as functions and
//! registers them, once, with [`commands!`]:
//!
//! ```
//! use station::json::Object;
//! use station::Error;
//!
//! fn greet(input: Object) -> Result<Object, Error> {
//!     let name = input.get_str("name").unwrap_or("").trim();
//!     if name.is_empty() {
//!         return Err(Error::new("name is required"));
//!     }
//!     Ok(Object::new().with("greeting", format!("Hello, {}!", name)))
//! }
//!
//! station::commands! {
//!     "greet" => greet,
//! }
//! # fn main() {
//! # assert_eq!(COMMANDS.invoke("greet", br#"{"name":"Ada"}"#).unwrap(), br#"{"greeting":"Hello, Ada!"}"#);
//! # }
//! ```
//!
//! Build it for `wasm32-wasi` (`wasm32-wasip1` on newer toolchains) as a
//! `cdylib`: `station module build` does, with rustc alone, or
//! `cargo build --release --target wasm32-wasi` with `crate-type = ["cdylib"]`.
//!
//! # Commands
//!
//! A command is a function `fn(I) -> Result<O, E>`:
//!
//! - `I` is what it takes ([`FromInput`]): a [`json::Object`] (an input
//!   that is not an object fails the call with `invalid input: ...` before
//!   the function runs), any [`json::Value`], or the raw bytes (`Vec<u8>`).
//!   An empty input is an empty object, or `null`.
//! - `O` is what it returns ([`IntoOutput`]): an `Object` or a `Value`,
//!   encoded as the JSON result; `()`, which the caller sees as `null`; or
//!   `Vec<u8>`, passed through as the result (it must be JSON).
//! - `E` is any error that implements `Display`: [`Error`], `String`,
//!   `Box<dyn std::error::Error>`, [`HostError`]. Its text is the call's
//!   error message (`CallFailed`).
//!
//! A command the module does not register fails with
//! `unknown command "NAME" (commands: a, b)` (`CallUnknownCommand`).
//!
//! # Panics
//!
//! A panic cannot be caught: the standard library of the WASI targets
//! aborts on panic (there is no unwinding), so a panicking command traps.
//! The SDK's panic hook first writes `panic: MESSAGE (FILE:LINE:COLUMN)` to
//! the module log and to stderr; the call fails with a crash error that
//! quotes that line, and the station discards the instance (the next call
//! gets a fresh one; nothing else is affected). The Go SDK, which can
//! recover, fails the call instead: return an error rather than panic
//! wherever you can.
//!
//! # Host calls
//!
//! [`http`] performs requests through the station's network gate; a refusal
//! is a [`HostError`] whose [`is_denied`](HostError::is_denied) is true.
//! [`log`] writes to the module log. [`json`] and [`base64`] are the small
//! codecs the ABI needs.
//!
//! # Testing natively
//!
//! The crate builds for any target. Off wasm32 there is no station:
//! [`COMMANDS.invoke`](Commands::invoke) (the static that [`commands!`]
//! defines) runs a command in-process, log lines go to standard error, and
//! host calls fail with [`Status::Unavailable`].

#![forbid(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod base64;
mod error;
pub mod http;
pub mod json;
pub mod log;
#[allow(unsafe_code)]
mod sys;

pub use error::{Error, HostError, Status};

use std::fmt;

use json::{Object, Value};

/// Returns the placeholder of the secret `name`, which the module's
/// manifest declares under `requires.secrets`. Write it where the value
/// goes in a request (a header, or the URL or body where the manifest's
/// `in` allows it); the station's network gate puts the value in only in
/// requests to the hosts the secret is bound to, and the module never sees
/// it:
///
/// ```ignore
/// req.header("Authorization", &format!("Bearer {}", station::secret("STRIPE_KEY")));
/// ```
///
/// Panics if `name` is not a secret name (an upper-case letter, then
/// upper-case letters, digits and `_`, at most 64).
pub fn secret(name: &str) -> String {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_uppercase()
        && b.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
    if !ok {
        panic!("station::secret({:?}): a secret's name is an upper-case letter, then upper-case letters, digits and _", name);
    }
    format!("~station-secret~{}~", name)
}

/// What a command takes: the call's input, converted before the command
/// runs. A conversion that fails fails the call with its message.
pub trait FromInput: Sized {
    /// Converts the input bytes (empty when the call has no input).
    fn from_input(input: Vec<u8>) -> Result<Self, String>;
}

/// Reports whether b is empty but for whitespace.
fn blank(b: &[u8]) -> bool {
    b.iter()
        .all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// The input parsed as JSON; an empty input is `null`. Input that is not
/// JSON fails with `invalid input: ...`.
impl FromInput for Value {
    fn from_input(input: Vec<u8>) -> Result<Value, String> {
        if blank(&input) {
            return Ok(Value::Null);
        }
        json::parse(&input).map_err(|e| format!("invalid input: {}", e))
    }
}

/// The input as a JSON object; an empty input and `null` are an empty
/// object (as the Go SDK decodes them into a struct). Any other input that
/// is not an object fails with `invalid input: ...`.
impl FromInput for Object {
    fn from_input(input: Vec<u8>) -> Result<Object, String> {
        match Value::from_input(input)? {
            Value::Object(o) => Ok(o),
            Value::Null => Ok(Object::new()),
            v => Err(format!(
                "invalid input: expected a JSON object, got {}",
                v.kind()
            )),
        }
    }
}

/// The input bytes as the station passed them.
impl FromInput for Vec<u8> {
    fn from_input(input: Vec<u8>) -> Result<Vec<u8>, String> {
        Ok(input)
    }
}

/// What a command returns: its result, as the bytes of a JSON document.
pub trait IntoOutput {
    /// The result's bytes; empty means `null`.
    fn into_output(self) -> Vec<u8>;
}

impl IntoOutput for Value {
    fn into_output(self) -> Vec<u8> {
        json::to_vec(&self)
    }
}

impl IntoOutput for Object {
    fn into_output(self) -> Vec<u8> {
        json::to_vec(&Value::Object(self))
    }
}

/// No result: the caller sees `null`.
impl IntoOutput for () {
    fn into_output(self) -> Vec<u8> {
        Vec::new()
    }
}

/// The bytes, as the result: they must be a JSON document, or the station
/// fails the call.
impl IntoOutput for Vec<u8> {
    fn into_output(self) -> Vec<u8> {
        self
    }
}

/// How a call fails: what the station's caller sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The command failed (`CallFailed`, 1) with this message.
    Failed(String),
    /// The module has no such command (`CallUnknownCommand`, 2).
    UnknownCommand(String),
}

impl CallError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            CallError::Failed(m) | CallError::UnknownCommand(m) => m,
        }
    }

    /// The value `station_call` returns for it.
    pub fn code(&self) -> i32 {
        match self {
            CallError::Failed(_) => 1,
            CallError::UnknownCommand(_) => 2,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for CallError {}

/// A command's entry, as `commands!` makes it: input bytes in, result bytes
/// or an error message out.
#[doc(hidden)]
pub type Handler = fn(Vec<u8>) -> Result<Vec<u8>, String>;

/// The commands of a module: the static `COMMANDS` that [`commands!`]
/// defines.
pub struct Commands {
    list: &'static [(&'static str, Handler)],
}

impl Commands {
    /// The table of `list`. It is evaluated at compile time, where an empty
    /// or repeated name is an error.
    #[doc(hidden)]
    pub const fn new(list: &'static [(&'static str, Handler)]) -> Commands {
        let mut i = 0;
        while i < list.len() {
            let a = list[i].0.as_bytes();
            if a.is_empty() {
                panic!("station::commands!: a command name is empty");
            }
            let mut j = i + 1;
            while j < list.len() {
                let b = list[j].0.as_bytes();
                if a.len() == b.len() {
                    let mut k = 0;
                    while k < a.len() && a[k] == b[k] {
                        k += 1;
                    }
                    if k == a.len() {
                        panic!("station::commands!: a command is registered twice");
                    }
                }
                j += 1;
            }
            i += 1;
        }
        Commands { list }
    }

    /// The command names, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.list.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names
    }

    fn lookup(&self, command: &[u8]) -> Option<Handler> {
        self.list
            .iter()
            .find(|(n, _)| n.as_bytes() == command)
            .map(|(_, h)| *h)
    }

    fn unknown(&self, command: &[u8]) -> CallError {
        let name = go_quote(command);
        CallError::UnknownCommand(if self.list.is_empty() {
            format!(
                "unknown command {}: this module registers no commands",
                name
            )
        } else {
            format!(
                "unknown command {} (commands: {})",
                name,
                self.names().join(", ")
            )
        })
    }

    /// Runs `command` on `input` in-process, as a call from the station
    /// would, and returns its result (`null` for none) or how it failed.
    /// It is the way to test a module's commands natively:
    ///
    /// ```ignore
    /// assert_eq!(COMMANDS.invoke("greet", br#"{"name":"Ada"}"#).unwrap(), br#"{"greeting":"Hello, Ada!"}"#);
    /// ```
    pub fn invoke(&self, command: &str, input: &[u8]) -> Result<Vec<u8>, CallError> {
        let handler = self
            .lookup(command.as_bytes())
            .ok_or_else(|| self.unknown(command.as_bytes()))?;
        match handler(input.to_vec()) {
            Ok(out) if out.is_empty() => Ok(b"null".to_vec()),
            Ok(out) => Ok(out),
            Err(msg) => Err(CallError::Failed(msg)),
        }
    }

    /// The `station_call` export (docs/abi.md): reads the command name and
    /// the input from their buffers, runs the command and sets the output.
    #[doc(hidden)]
    pub fn __station_call(&self, command: i32, input: i32) -> i32 {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            // The closure names no hook-argument type: std renamed it (PanicHookInfo).
            std::panic::set_hook(Box::new(|info| {
                report_panic(info.payload(), info.location())
            }))
        });
        let name = match sys::read_buffer(command) {
            Ok(name) => name,
            Err(s) => {
                sys::free_buffer(input);
                return fail(&format!("station: read the command name: {}", s));
            }
        };
        let handler = match self.lookup(&name) {
            Some(h) => h,
            None => {
                sys::free_buffer(input);
                let e = self.unknown(&name);
                fail(e.message());
                return e.code();
            }
        };
        let input = match sys::read_buffer(input) {
            Ok(b) => b,
            Err(s) => {
                return fail(&format!(
                    "station: read the input of command {}: {}",
                    go_quote(&name),
                    s
                ));
            }
        };
        match handler(input) {
            Ok(out) if out.is_empty() => 0,
            Ok(out) => match sys::set_output(&out) {
                Ok(()) => 0,
                Err(s) => fail(&format!(
                    "station: command {}: set a result of {} bytes: {}",
                    go_quote(&name),
                    out.len(),
                    s
                )),
            },
            Err(msg) => fail(&msg),
        }
    }
}

/// Reports a panic before the module aborts: to the module log, at level
/// error, and to stderr as a line `panic: MESSAGE (FILE:LINE:COLUMN)`,
/// which the station quotes in the crash error the caller sees.
fn report_panic(payload: &(dyn std::any::Any + Send), location: Option<&std::panic::Location<'_>>) {
    use std::io::Write;
    let msg = match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => s,
        (_, Some(s)) => s.as_str(),
        _ => "Box<dyn Any>",
    };
    let mut line = format!("panic: {}", msg.replace('\n', " "));
    if let Some(at) = location {
        line.push_str(&format!(" ({}:{}:{})", at.file(), at.line(), at.column()));
    }
    log::error(&line);
    let _ = writeln!(std::io::stderr(), "{}", line);
}

/// Sets msg as the call's output and returns CallFailed.
fn fail(msg: &str) -> i32 {
    let _ = sys::set_output(msg.as_bytes());
    1
}

/// s quoted as Go's %q quotes it, for the ASCII part: the names in messages
/// read the same as the Go SDK's. Bytes of invalid UTF-8 are `\xNN`.
fn go_quote(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut rest = s;
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(v) => (v, None),
            Err(e) => (
                std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or_default(),
                Some(rest[e.valid_up_to()]),
            ),
        };
        for c in valid.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    out.push_str(&format!("\\x{:02x}", c as u32))
                }
                c => out.push(c),
            }
        }
        rest = &rest[valid.len()..];
        if let Some(b) = bad {
            out.push_str(&format!("\\x{:02x}", b));
            rest = &rest[1..];
        }
    }
    out.push('"');
    out
}

/// Runs command function `f` on `input`: converts the input, calls `f`,
/// encodes its result or renders its error.
#[doc(hidden)]
pub fn __run<F, I, O, E>(f: F, input: Vec<u8>) -> Result<Vec<u8>, String>
where
    F: FnOnce(I) -> Result<O, E>,
    I: FromInput,
    O: IntoOutput,
    E: fmt::Display,
{
    let input = I::from_input(input)?;
    match f(input) {
        Ok(out) => Ok(out.into_output()),
        Err(e) => Err(e.to_string()),
    }
}

/// Registers the module's commands: each a name and a function (see
/// [Commands](crate#commands) for the functions it takes).
///
/// ```ignore
/// station::commands! {
///     "greet" => greet,
///     "fetch" => fetch,
/// }
/// ```
///
/// Use it once, in the crate's root. It defines the exports the station
/// calls (`station_abi_1`, which declares ABI version 1, and
/// `station_call`), and `pub static COMMANDS:` [`Commands`], whose
/// [`invoke`](Commands::invoke) runs a command natively, for tests. A name
/// that is empty or given twice is a compile-time error.
#[macro_export]
macro_rules! commands {
    ($($name:literal => $handler:expr),+ $(,)?) => {
        /// The module's commands, as `station::commands!` registered them.
        pub static COMMANDS: $crate::Commands = $crate::Commands::new(&[$(
            ($name, {
                fn handler(input: ::std::vec::Vec<u8>) -> ::std::result::Result<::std::vec::Vec<u8>, ::std::string::String> {
                    $crate::__run($handler, input)
                }
                handler as $crate::Handler
            }),
        )+]);

        /// Declares Station ABI version 1 (never called).
        // The export names are the ABI's: unmangled on purpose.
        #[doc(hidden)]
        #[allow(unsafe_code)]
        #[no_mangle]
        pub extern "C" fn station_abi_1() {}

        /// Runs one command for the station (docs/abi.md, station_call).
        #[doc(hidden)]
        #[allow(unsafe_code)]
        #[no_mangle]
        pub extern "C" fn station_call(command: i32, input: i32) -> i32 {
            COMMANDS.__station_call(command, input)
        }
    };
}

#[cfg(test)]
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;

    fn greet(input: Object) -> Result<Object, Error> {
        let name = input.get_str("name").unwrap_or("").trim();
        if name.is_empty() {
            bail!("name is required");
        }
        Ok(Object::new().with("greeting", format!("Hello, {}!", name)))
    }

    fn echo(input: Value) -> Result<Value, String> {
        Ok(input)
    }

    fn raw(input: Vec<u8>) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let s = std::str::from_utf8(&input)?;
        Ok(format!("{:?}", s.len()).into_bytes())
    }

    fn nothing(_: Value) -> Result<(), HostError> {
        Ok(())
    }

    fn host(_: Value) -> Result<(), HostError> {
        http::get("https://a.test/").map(drop)
    }

    commands! {
        "greet" => greet,
        "echo" => echo,
        "raw" => raw,
        "nothing" => nothing,
        "host" => host,
        "closure" => |o: Object| -> Result<Value, Error> { Ok(Value::from(o.len())) },
    }

    #[test]
    fn invoke() {
        let ok = |c: &str, i: &[u8]| String::from_utf8(COMMANDS.invoke(c, i).unwrap()).unwrap();
        let err = |c: &str, i: &[u8]| COMMANDS.invoke(c, i).unwrap_err();
        assert_eq!(
            ok("greet", br#"{"name":" Ada "}"#),
            r#"{"greeting":"Hello, Ada!"}"#
        );
        assert_eq!(
            err("greet", b""),
            CallError::Failed("name is required".into())
        );
        assert_eq!(err("greet", b"null").message(), "name is required");
        assert_eq!(
            err("greet", b"[1]").message(),
            "invalid input: expected a JSON object, got an array"
        );
        assert_eq!(
            err("greet", b"{").message(),
            "invalid input: unexpected end of input at byte 1"
        );
        assert_eq!(ok("echo", b" "), "null");
        assert_eq!(
            ok("echo", br#" {"a" : [1, "\u00e9"]} "#),
            r#"{"a":[1,"é"]}"#
        );
        assert_eq!(ok("raw", b"not json"), "8");
        assert_eq!(
            err("raw", b"\xff").message(),
            "invalid utf-8 sequence of 1 bytes from index 0"
        );
        assert_eq!(ok("nothing", b""), "null");
        assert_eq!(
            err("host", b"").message(),
            "station: host call failed: unavailable"
        );
        assert_eq!(ok("closure", br#"{"a":1,"b":2}"#), "2");
        let e = err("wave", b"");
        assert_eq!(e.code(), 2);
        assert_eq!(
            e.message(),
            r#"unknown command "wave" (commands: closure, echo, greet, host, nothing, raw)"#
        );
    }

    #[test]
    fn quote() {
        assert_eq!(
            go_quote("a\"b\\c\n\x01\x7f\u{e9}".as_bytes()),
            r#""a\"b\\c\n\x01\x7fé""#
        );
        assert_eq!(go_quote(b"\xff\xe9x"), r#""\xff\xe9x""#);
    }
}
