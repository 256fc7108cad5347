//! The Rust SDK's example module: `greet` greets whoever you name, `fetch`
//! GETs a URL through the station's network gate (the manifest allows
//! api.example.test and nothing else). Build it with
//!
//! ```text
//! station module build examples/rust/hello
//! ```
//!
//! or with cargo: `cargo build --release --target wasm32-wasi` (copy
//! `target/wasm32-wasi/release/hello.wasm` to `module.wasm`).

use station::json::Object;
use station::{http, Error};

/// `{"name": "Ada"}` -> `{"greeting": "Hello, Ada!"}`. The name is trimmed
/// of ASCII whitespace and must not be empty.
fn greet(input: Object) -> Result<Object, Error> {
    input.only(&["name"])?;
    let name = input.get_str("name").map(trim_ascii).unwrap_or("");
    if name.is_empty() {
        return Err(Error::new("name is required"));
    }
    Ok(Object::new().with("greeting", format!("Hello, {}!", name)))
}

/// `{"url": "https://api.example.test/hello"}` -> `{"status": 200, "body":
/// "..."}`: any HTTP status is a result; a request the station refuses or
/// fails fails the command with the station's message.
fn fetch(input: Object) -> Result<Object, Error> {
    input.only(&["url"])?;
    let url = input.get_str("url").unwrap_or("");
    if url.is_empty() {
        return Err(Error::new("url is required"));
    }
    let resp = http::get(url)?;
    Ok(Object::new()
        .with("status", resp.status)
        .with("body", resp.text_lossy()))
}

/// s without leading and trailing ASCII whitespace (space, \t, \n, \v, \f,
/// \r).
fn trim_ascii(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'))
}

station::commands! {
    "greet" => greet,
    "fetch" => fetch,
}

#[cfg(test)]
mod tests {
    use super::COMMANDS;

    #[test]
    fn greet() {
        let out = COMMANDS.invoke("greet", br#"{"name": "  Ada\t"}"#).unwrap();
        assert_eq!(out, br#"{"greeting":"Hello, Ada!"}"#);
        for input in [
            &b""[..],
            b"{}",
            br#"{"name": ""}"#,
            br#"{"name": " "}"#,
            br#"{"name": 7}"#,
        ] {
            assert_eq!(
                COMMANDS.invoke("greet", input).unwrap_err().message(),
                "name is required"
            );
        }
        for input in [&b"[1]"[..], br#""x""#, b"{", b"{} x"] {
            let e = COMMANDS.invoke("greet", input).unwrap_err();
            assert!(e.message().starts_with("invalid input:"), "{}", e);
        }
    }

    #[test]
    fn unknown() {
        let e = COMMANDS.invoke("x", b"").unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (2, r#"unknown command "x" (commands: fetch, greet)"#)
        );
    }

    #[test]
    fn fetch_needs_a_url() {
        assert_eq!(
            COMMANDS
                .invoke("fetch", br#"{"url": ""}"#)
                .unwrap_err()
                .message(),
            "url is required"
        );
    }
}
