//! HTTP through the station's network gate (the `http_request` import).
//!
//! The gate checks every request, and every redirect hop, against the
//! module's manifest (`requires.network.allow`); a request it refuses fails
//! with a [`HostError`] whose [`is_denied`](HostError::is_denied) is true,
//! and is recorded in the audit log. The station follows redirects itself,
//! performs the whole exchange before the call returns (bodies are
//! buffered, not streamed), and hands back any HTTP status, 404 and 500
//! included, as a [`Response`].
//!
//! ```no_run
//! use station::http::{self, Request};
//!
//! # fn main() -> Result<(), station::HostError> {
//! let resp = http::get("https://api.example.test/hello")?;
//! let text = resp.text_lossy();
//!
//! let resp = Request::post("https://api.example.test/items", r#"{"n":1}"#)
//!     .header("Content-Type", "application/json")
//!     .send()?;
//! if resp.status != 201 {
//!     station::log::warn(&format!("status {}", resp.status));
//! }
//! # Ok(())
//! # }
//! ```

// A HostError is five strings: large for an Err, but a host call costs far
// more than moving it, and its fields are the station's document as is.
#![allow(clippy::result_large_err)]

use crate::base64;
use crate::error::{HostError, Status};
use crate::json::{self, Object, Value};
use crate::sys;

/// An HTTP request: an `HTTPRequest` document (docs/abi.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, ...; empty means `GET`.
    pub method: String,
    /// An absolute `https://` (or, where the manifest grants it, `http://`)
    /// URL.
    pub url: String,
    /// Header names and values, in order; a name given twice has two values.
    /// The station refuses `Host`, hop-by-hop, proxy and framing headers.
    pub headers: Vec<(String, String)>,
    /// The body; empty for none.
    pub body: Vec<u8>,
}

impl Request {
    /// A request with method `method` for `url`.
    pub fn new(method: &str, url: &str) -> Request {
        Request {
            method: method.to_owned(),
            url: url.to_owned(),
            ..Request::default()
        }
    }

    /// A GET request for `url`.
    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    /// A POST request for `url` with body `body`.
    pub fn post(url: &str, body: impl Into<Vec<u8>>) -> Request {
        Request::new("POST", url).body(body)
    }

    /// The request with one more value of header `name`.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The request with body `body`.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// Performs the request through the station: [`request`].
    pub fn send(&self) -> Result<Response, HostError> {
        request(self)
    }

    /// The `HTTPRequest` document of the request.
    pub fn to_document(&self) -> Vec<u8> {
        let mut o = Object::new()
            .with(
                "method",
                if self.method.is_empty() {
                    "GET"
                } else {
                    self.method.as_str()
                },
            )
            .with("url", self.url.as_str());
        if !self.headers.is_empty() {
            let mut h = Object::new();
            for (name, value) in &self.headers {
                match h.get_mut(name) {
                    Some(Value::Array(values)) => values.push(value.into()),
                    _ => {
                        h.insert(name.as_str(), vec![Value::from(value)]);
                    }
                }
            }
            o.insert("headers", h);
        }
        if !self.body.is_empty() {
            o.insert("body", base64::encode(&self.body));
        }
        json::to_vec(&Value::Object(o))
    }
}

/// An HTTP response: an `HTTPResponse` document (docs/abi.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code of the final response.
    pub status: u16,
    /// Header names and values, as the station sent them; a name with two
    /// values occurs twice.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The final URL, after the redirects the station followed.
    pub url: String,
}

impl Response {
    /// The first value of header `name`, compared without regard to ASCII
    /// case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(&self.body)
    }

    /// The body as text, each byte that is not part of valid UTF-8 replaced
    /// with U+FFFD (as Go's string conversion and JSON encoding do).
    pub fn text_lossy(&self) -> String {
        let mut s = String::with_capacity(self.body.len());
        json::push_lossy(&mut s, &self.body);
        s
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Result<Value, json::ParseError> {
        json::parse(&self.body)
    }

    /// The response of the `HTTPResponse` document `doc`. Unknown fields
    /// are ignored.
    pub fn from_document(doc: &[u8]) -> Result<Response, String> {
        let v = json::parse(doc).map_err(|e| e.to_string())?;
        let o = v
            .as_object()
            .ok_or_else(|| format!("{} is not an object", v.kind()))?;
        let status = match o.get("status") {
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| format!("status {} is not an integer", n))?,
            None | Some(Value::Null) => 0,
            Some(v) => return Err(format!("status is {}", v.kind())),
        };
        if !(100..=999).contains(&status) {
            return Err(format!("the station returned status {}", status));
        }
        let mut resp = Response {
            status: status as u16,
            ..Response::default()
        };
        match o.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(h)) => {
                for (name, values) in h.iter() {
                    match values {
                        Value::Null => {}
                        Value::Array(vs) => {
                            for v in vs {
                                let v = v.as_str().ok_or_else(|| {
                                    format!("header {:?}: a value is {}", name, v.kind())
                                })?;
                                resp.headers.push((name.to_owned(), v.to_owned()));
                            }
                        }
                        v => return Err(format!("header {:?} is {}", name, v.kind())),
                    }
                }
            }
            Some(v) => return Err(format!("headers is {}", v.kind())),
        }
        match o.get("body") {
            None | Some(Value::Null) => {}
            Some(Value::String(b)) => {
                resp.body = base64::decode(b.as_bytes()).map_err(|e| format!("body: {}", e))?
            }
            Some(v) => return Err(format!("body is {}", v.kind())),
        }
        match o.get("url") {
            None | Some(Value::Null) => {}
            Some(Value::String(u)) => resp.url = u.clone(),
            Some(v) => return Err(format!("url is {}", v.kind())),
        }
        Ok(resp)
    }
}

/// Performs `req` through the station's network gate. Any HTTP status is a
/// response; an error is the station's refusal or failure (a denial, a
/// limit, a connection that failed, the deadline).
pub fn request(req: &Request) -> Result<Response, HostError> {
    let (status, doc) = sys::http_request(&req.to_document());
    if status != Status::Ok {
        return Err(HostError::from_document(status, doc.as_deref()));
    }
    Response::from_document(doc.as_deref().unwrap_or_default()).map_err(|e| {
        HostError::new(
            Status::Failed,
            format!("station: decode the station's response: {}", e),
        )
    })
}

/// GETs `url` through the station's network gate: [`request`] of
/// [`Request::get`].
pub fn get(url: &str) -> Result<Response, HostError> {
    request(&Request::get(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document() {
        let r = Request::post("https://a.test/x?y=1", "hi")
            .header("A", "1")
            .header("b", "2")
            .header("A", "3");
        assert_eq!(
            String::from_utf8(r.to_document()).unwrap(),
            r#"{"method":"POST","url":"https://a.test/x?y=1","headers":{"A":["1","3"],"b":["2"]},"body":"aGk="}"#
        );
        assert_eq!(
            String::from_utf8(Request::default().to_document()).unwrap(),
            r#"{"method":"GET","url":""}"#
        );
    }

    #[test]
    fn response() {
        let r = Response::from_document(br#"{"status":200,"headers":{"Content-Type":["text/plain"],"X":["1","2"]},"body":"aGk=","url":"https://a.test/","new":true}"#).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert_eq!(r.headers.len(), 3);
        assert_eq!(r.text(), Ok("hi"));
        assert_eq!(r.url, "https://a.test/");
        let r = Response::from_document(br#"{"status":404,"url":"u"}"#).unwrap();
        assert!(r.body.is_empty() && r.headers.is_empty());
        for bad in [
            &br#"{"status":20}"#[..],
            br#"{"status":"200"}"#,
            br#"{"status":200.5}"#,
            br#"{"status":200,"body":"!"}"#,
            b"[]",
            b"{",
        ] {
            assert!(
                Response::from_document(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let r = Response {
            body: b"a\xffb".to_vec(),
            ..Response::default()
        };
        assert_eq!(r.text_lossy(), "a\u{FFFD}b");
    }

    #[test]
    fn native_is_unavailable() {
        let e = get("https://a.test/").unwrap_err();
        assert_eq!(e.status, Status::Unavailable);
        assert_eq!(e.message, "station: host call failed: unavailable");
    }
}
