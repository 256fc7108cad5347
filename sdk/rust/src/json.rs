//! A small, strict JSON: the [`Value`] tree, a parser ([`parse`]) and a
//! serializer ([`Value::to_string`], [`to_vec`]).
//!
//! The parser accepts exactly RFC 8259 JSON and refuses everything else with
//! a [`ParseError`] that says what and where: a syntax error, a control
//! character in a string, an invalid escape, data after the document, or
//! nesting deeper than [`MAX_DEPTH`] (so a hostile input cannot exhaust the
//! stack). Where the Go SDK's `encoding/json` is lenient in a way a caller
//! can observe, this parser behaves the same, so that a Rust and a Go build
//! of a module answer alike:
//!
//! - a `\uXXXX` escape of a lone surrogate, and a byte of invalid UTF-8 in a
//!   string, each become U+FFFD (a valid surrogate pair is one character);
//! - of keys that occur twice in one object, the last value wins (at the
//!   position of the first).
//!
//! The serializer writes compact JSON, escaping as `encoding/json` does
//! without HTML escaping: `"` and `\`, control characters (`\n`, `\r`, `\t`,
//! `\b`, `\f`, else `\u00XX`), and U+2028 and U+2029. Numbers keep the text
//! they were parsed from; numbers made from an `f64` are formatted as Go
//! formats them.
//!
//! ```
//! use station::json::{self, Object, Value};
//!
//! let v = json::parse(br#"{"name": "Ada", "tags": ["x"]}"#).unwrap();
//! assert_eq!(v["name"].as_str(), Some("Ada"));
//! assert_eq!(v["missing"], Value::Null);
//!
//! let out = Object::new().with("greeting", "Hello, Ada!");
//! assert_eq!(Value::from(out).to_string(), r#"{"greeting":"Hello, Ada!"}"#);
//! ```

use std::fmt;
use std::ops::Index;
use std::str::FromStr;

/// The deepest nesting of arrays and objects [`parse`] accepts.
pub const MAX_DEPTH: usize = 512;

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, kept as its text.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, in the order of its keys.
    Object(Object),
}

static NULL: Value = Value::Null;

impl Value {
    /// Reports whether the value is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The boolean, if the value is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The number, if the value is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The number as an `i64`, if the value is an integer that fits
    /// (`1.0` and `1e2` are not integers).
    pub fn as_i64(&self) -> Option<i64> {
        self.as_number().and_then(Number::as_i64)
    }

    /// The number as a `u64`, if the value is a non-negative integer that
    /// fits.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_number().and_then(Number::as_u64)
    }

    /// The number as an `f64`, if the value is a number within its range.
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number().and_then(Number::as_f64)
    }

    /// The elements, if the value is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The object, if the value is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The value of field `key`, if the value is an object that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.get(key))
    }

    /// What kind of value this is, for messages: `null`, `a boolean`, `a
    /// number`, `a string`, `an array` or `an object`.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// `value["key"]` is the field's value, or `null` if the value is not an
/// object or has no such field.
impl Index<&str> for Value {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

/// `value[i]` is the array's element `i`, or `null` if the value is not an
/// array or is shorter.
impl Index<usize> for Value {
    type Output = Value;
    fn index(&self, i: usize) -> &Value {
        self.as_array().and_then(|a| a.get(i)).unwrap_or(&NULL)
    }
}

/// Compact JSON: `value.to_string()` is the document.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_value(&mut s, self);
        f.write_str(&s)
    }
}

/// `"...".parse::<Value>()` is [`parse`].
impl FromStr for Value {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Value, ParseError> {
        parse(s.as_bytes())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::String(s.clone())
    }
}

impl From<Number> for Value {
    fn from(n: Number) -> Value {
        Value::Number(n)
    }
}

/// A finite `f64` is a number; NaN and the infinities, which JSON cannot
/// represent, are `null`.
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

impl From<Object> for Value {
    fn from(o: Object) -> Value {
        Value::Object(o)
    }
}

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}

impl From<()> for Value {
    fn from(_: ()) -> Value {
        Value::Null
    }
}

/// `None` is `null`.
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Value {
        o.map_or(Value::Null, Into::into)
    }
}

macro_rules! from_integer {
    ($($t:ty),*) => {$(
        impl From<$t> for Number {
            fn from(n: $t) -> Number {
                Number(n.to_string())
            }
        }
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Number(Number::from(n))
            }
        }
    )*};
}

from_integer!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl<T: Into<Value>> FromIterator<T> for Value {
    /// An array of the items.
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Value {
        Value::Array(iter.into_iter().map(Into::into).collect())
    }
}

/// A JSON number, kept as its text: parsing and serializing a document does
/// not change its numbers (`1.0` stays `1.0`, a 30-digit integer keeps its
/// digits). Two numbers are equal when their texts are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Number(String);

impl Number {
    /// The number made from `f`, formatted as Go's `encoding/json` formats
    /// an `f64` (`1`, `0.5`, `1e+21`, `1e-7`); `None` for NaN and the
    /// infinities.
    pub fn from_f64(f: f64) -> Option<Number> {
        if !f.is_finite() {
            return None;
        }
        let abs = f.abs();
        if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
            // Rust's shortest form, "1e21" or "1.5e-7", with Go's sign of a
            // positive exponent.
            let s = format!("{:e}", f);
            return Some(Number(match s.find('e') {
                Some(i) if !s[i + 1..].starts_with('-') => format!("{}e+{}", &s[..i], &s[i + 1..]),
                _ => s,
            }));
        }
        Some(Number(format!("{}", f)))
    }

    /// The number's text, a valid JSON number.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Reports whether the number is written as an integer (no fraction, no
    /// exponent).
    pub fn is_integer(&self) -> bool {
        !self.0.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
    }

    /// The number as an `i64`, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        if self.is_integer() {
            self.0.parse().ok()
        } else {
            None
        }
    }

    /// The number as a `u64`, if it is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        if self.is_integer() {
            self.0.parse().ok()
        } else {
            None
        }
    }

    /// The number as an `f64` (the nearest one), if it is within the range
    /// of an `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        self.0.parse::<f64>().ok().filter(|f| f.is_finite())
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON object: its fields in order, each key once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    entries: Vec<(String, Value)>,
}

impl Object {
    /// An empty object.
    pub fn new() -> Object {
        Object::default()
    }

    /// The value of field `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of field `key`, to change it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The string value of field `key`: `None` if the field is missing or
    /// not a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// Reports whether the object has field `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets field `key` to `value` and returns its old value. A new key goes
    /// last; an existing one keeps its place.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        let key = key.into();
        let value = value.into();
        match self.get_mut(&key) {
            Some(old) => Some(std::mem::replace(old, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// The object with field `key` set to `value`, for building results:
    ///
    /// ```
    /// # use station::json::Object;
    /// let out = Object::new().with("status", 200).with("body", "ok");
    /// ```
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Object {
        self.insert(key, value);
        self
    }

    /// Removes field `key` and returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Reports whether the object has no fields.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// Refuses an input with a field not in `fields`, as the Go SDK refuses
    /// a field its input type does not have (and the C SDK one its command
    /// table does not list): `invalid input: unknown field "nmae"`. A
    /// misspelled option then fails instead of being silently ignored.
    ///
    /// ```
    /// let input = station::json::parse(br#"{"nmae": "Ada"}"#).unwrap();
    /// let err = input.as_object().unwrap().only(&["name"]).unwrap_err();
    /// assert_eq!(err.message(), r#"invalid input: unknown field "nmae""#);
    /// ```
    pub fn only(&self, fields: &[&str]) -> Result<(), crate::Error> {
        match self.keys().find(|k| !fields.contains(k)) {
            None => Ok(()),
            Some(k) => {
                let mut quoted = String::new();
                write_string(&mut quoted, k);
                Err(crate::Error::new(format!("invalid input: unknown field {}", quoted)))
            }
        }
    }
}

/// `object["key"]` is the field's value, or `null`.
impl Index<&str> for Object {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

/// Compact JSON.
impl fmt::Display for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_object(&mut s, self);
        f.write_str(&s)
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for Object {
    /// The object of the fields; of keys given twice, the last value wins.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Object {
        let mut o = Object::new();
        for (k, v) in iter {
            o.insert(k, v);
        }
        o
    }
}

impl IntoIterator for Object {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

/// Why a document is not JSON, and where: the byte offset into the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    message: String,
    offset: usize,
}

impl ParseError {
    /// What is wrong, without the offset.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The offset into the input, in bytes, where it is wrong.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parses the JSON document `input`: one value, with optional whitespace
/// around it and nothing else.
pub fn parse(input: &[u8]) -> Result<Value, ParseError> {
    let mut p = Parser {
        b: input,
        i: 0,
        depth: 0,
    };
    p.skip_ws();
    let v = p.value()?;
    p.skip_ws();
    if p.i < p.b.len() {
        return Err(p.error("data after the JSON document"));
    }
    Ok(v)
}

/// The compact JSON of `value`, as bytes.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut s = String::new();
    write_value(&mut s, value);
    s.into_bytes()
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            message: message.into(),
            offset: self.i,
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.b.get(self.i) {
            None => self.error("unexpected end of input"),
            Some(&c) if c.is_ascii_graphic() => {
                self.error(format!("unexpected character '{}'", c as char))
            }
            Some(&c) => self.error(format!("unexpected byte 0x{:02x}", c)),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(b'{') => self.object().map(Value::Object),
            Some(b'[') => self.array().map(Value::Array),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number().map(Value::Number),
            _ => Err(self.unexpected()),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, ParseError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.error(format!("invalid literal (expected {})", word)))
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {} levels", MAX_DEPTH)));
        }
        self.depth += 1;
        self.i += 1; // the bracket
        Ok(())
    }

    fn array(&mut self) -> Result<Vec<Value>, ParseError> {
        self.enter()?;
        let mut a = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(a);
        }
        loop {
            a.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(a);
                }
                None => return Err(self.unexpected()),
                _ => return Err(self.error("expected ',' or ']' in an array")),
            }
        }
    }

    fn object(&mut self) -> Result<Object, ParseError> {
        self.enter()?;
        let mut entries = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(Object { entries });
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(match self.peek() {
                    None => self.unexpected(),
                    _ => self.error("expected a string key in an object"),
                });
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after an object key"));
            }
            self.i += 1;
            self.skip_ws();
            let v = self.value()?;
            entries.push((key, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    dedup_last_wins(&mut entries);
                    return Ok(Object { entries });
                }
                None => return Err(self.unexpected()),
                _ => return Err(self.error("expected ',' or '}' in an object")),
            }
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let open = self.i;
        self.i += 1; // the quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            push_lossy(&mut out, &self.b[start..self.i]);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(c) => {
                    return Err(self.error(format!("control character 0x{:02x} in a string", c)))
                }
                None => {
                    return Err(ParseError {
                        message: "unterminated string".into(),
                        offset: open,
                    })
                }
            }
        }
    }

    /// Reads the escape at self.i (a backslash) into out.
    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let c = match self.b.get(self.i + 1) {
            Some(&c) => c,
            None => {
                self.i += 1;
                return Err(self.unexpected());
            }
        };
        let simple = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let u = self
                    .hex4(self.i + 2)
                    .ok_or_else(|| self.error("invalid \\u escape"))?;
                self.i += 6;
                let ch = match u {
                    0xD800..=0xDBFF => match self.low_surrogate() {
                        Some(lo) => {
                            self.i += 6;
                            char::from_u32(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00))
                        }
                        None => None, // a lone high surrogate
                    },
                    _ => char::from_u32(u), // None for a lone low surrogate
                };
                out.push(ch.unwrap_or('\u{FFFD}'));
                return Ok(());
            }
            _ => {
                self.i += 1;
                return Err(match c {
                    0x21..=0x7e => self.error(format!("invalid escape '\\{}'", c as char)),
                    _ => self.error(format!("invalid escape: byte 0x{:02x} after '\\'", c)),
                });
            }
        };
        out.push(simple);
        self.i += 2;
        Ok(())
    }

    /// The low surrogate of a `\uDC00`-`\uDFFF` escape at self.i, if there
    /// is one.
    fn low_surrogate(&self) -> Option<u32> {
        if self.b.get(self.i) != Some(&b'\\') || self.b.get(self.i + 1) != Some(&b'u') {
            return None;
        }
        self.hex4(self.i + 2)
            .filter(|u| (0xDC00..=0xDFFF).contains(u))
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.b.get(at..at + 4)?;
        let mut u = 0;
        for &d in digits {
            u = u * 16 + (d as char).to_digit(16)?;
        }
        Some(u)
    }

    fn number(&mut self) -> Result<Number, ParseError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("invalid number (expected a digit)")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number (expected a digit after '.')"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number (expected a digit in the exponent)"));
            }
            self.digits();
        }
        // ASCII by construction.
        Ok(Number(
            self.b[start..self.i].iter().map(|&c| c as char).collect(),
        ))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }
}

/// Appends b to out, each byte that is not part of valid UTF-8 as U+FFFD
/// (one per byte, as Go does).
pub(crate) fn push_lossy(out: &mut String, mut b: &[u8]) {
    loop {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(s);
                return;
            }
            Err(e) => {
                let (valid, rest) = b.split_at(e.valid_up_to());
                if let Ok(s) = std::str::from_utf8(valid) {
                    out.push_str(s);
                }
                out.push('\u{FFFD}');
                b = &rest[1..];
            }
        }
    }
}

/// Keeps one entry per key: the last value, at the first key's position.
fn dedup_last_wins(entries: &mut Vec<(String, Value)>) {
    let n = entries.len();
    if n < 2 {
        return;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0).then(a.cmp(&b)));
    if !order.windows(2).any(|w| entries[w[0]].0 == entries[w[1]].0) {
        return;
    }
    let mut drop = vec![false; n];
    let mut g = 0;
    while g < n {
        let mut h = g + 1;
        while h < n && entries[order[h]].0 == entries[order[g]].0 {
            h += 1;
        }
        if h - g > 1 {
            let last = std::mem::replace(&mut entries[order[h - 1]].1, Value::Null);
            entries[order[g]].1 = last;
            for &k in &order[g + 1..h] {
                drop[k] = true;
            }
        }
        g = h;
    }
    let mut k = 0;
    entries.retain(|_| {
        k += 1;
        !drop[k - 1]
    });
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.0),
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, v);
            }
            out.push(']');
        }
        Value::Object(o) => write_object(out, o),
    }
}

fn write_object(out: &mut String, o: &Object) {
    out.push('{');
    for (i, (k, v)) in o.entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        write_value(out, v);
    }
    out.push('}');
}

/// Writes s as a JSON string, escaped as Go's encoding/json escapes without
/// HTML escaping.
pub(crate) fn write_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: &str = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            '\u{2028}' => "\\u2028",
            '\u{2029}' => "\\u2029",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let b = c as u8;
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xf) as usize] as char);
        } else {
            out.push_str(esc);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Value {
        parse(s.as_bytes()).unwrap_or_else(|e| panic!("parse {:?}: {}", s, e))
    }

    fn bad(s: &[u8]) -> String {
        match parse(s) {
            Ok(v) => panic!(
                "parse {:?} = {}, want an error",
                String::from_utf8_lossy(s),
                v
            ),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn round_trips() {
        for s in [
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1.5e-10",
            "123456789012345678901234567890",
            "1.0",
            "1E+2",
            "\"\"",
            "[]",
            "{}",
            r#"{"a":[1,{"b":null}],"c":"d"}"#,
            r#""\"\\\n\r\t\b\f\u0001\u001f\u2028\u2029<>&/""#,
        ] {
            assert_eq!(ok(s).to_string(), s);
        }
        assert_eq!(ok(" [ 1 , 2 ] \n").to_string(), "[1,2]");
        assert_eq!(ok(r#""\/""#).to_string(), r#""/""#);
        assert_eq!(ok(r#""\u00e9\u0041""#).as_str(), Some("éA"));
    }

    #[test]
    fn surrogates() {
        assert_eq!(ok(r#""\ud83d\ude00""#).as_str(), Some("😀"));
        assert_eq!(ok(r#""\uD83D\uDE00""#).as_str(), Some("😀"));
        assert_eq!(ok(r#""\ud800""#).as_str(), Some("\u{FFFD}"));
        assert_eq!(ok(r#""\udc00x""#).as_str(), Some("\u{FFFD}x"));
        assert_eq!(ok(r#""\ud800\u0041""#).as_str(), Some("\u{FFFD}A"));
        assert_eq!(ok(r#""\ud800\ud83d\ude00""#).as_str(), Some("\u{FFFD}😀"));
        assert_eq!(ok(r#""\ud800\n""#).as_str(), Some("\u{FFFD}\n"));
        bad(br#""\ud800\u12""#);
    }

    #[test]
    fn invalid_utf8_is_replaced_per_byte() {
        assert_eq!(parse(b"\"a\xffb\"").unwrap().as_str(), Some("a\u{FFFD}b"));
        assert_eq!(
            parse(b"\"\xf0\x9f\x98\"").unwrap().as_str(),
            Some("\u{FFFD}\u{FFFD}\u{FFFD}")
        );
        assert_eq!(
            parse(b"\"\xed\xa0\x80\"").unwrap().as_str(),
            Some("\u{FFFD}\u{FFFD}\u{FFFD}")
        );
    }

    #[test]
    fn refuses() {
        for s in [
            "",
            " ",
            "nul",
            "nulll",
            "tru",
            "[",
            "[1",
            "[1,]",
            "[,1]",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{a:1}",
            "{\"a\" 1}",
            "[1 2]",
            "01",
            "-",
            "1.",
            ".5",
            "+1",
            "1e",
            "1e+",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"a\nb\"",
            "\"\t\"",
            "[1]x",
            "{} {}",
            "'a'",
            "NaN",
            "Infinity",
            "\u{feff}1",
        ] {
            bad(s.as_bytes());
        }
        assert_eq!(bad(b"[1] x"), "data after the JSON document at byte 4");
        assert_eq!(bad(b"\"abc"), "unterminated string at byte 0");
        assert_eq!(
            bad(b"\"\x01\""),
            "control character 0x01 in a string at byte 1"
        );
        assert_eq!(bad(b""), "unexpected end of input at byte 0");
    }

    #[test]
    fn depth() {
        let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(parse(deep(MAX_DEPTH).as_bytes()).is_ok());
        assert_eq!(
            bad(deep(MAX_DEPTH + 1).as_bytes()),
            format!(
                "nesting deeper than {} levels at byte {}",
                MAX_DEPTH, MAX_DEPTH
            )
        );
        bad("[".repeat(1 << 20).as_bytes());
        bad("{\"a\":".repeat(100_000).as_bytes());
    }

    #[test]
    fn duplicate_keys() {
        let v = ok(r#"{"a":1,"b":2,"a":3}"#);
        assert_eq!(v.to_string(), r#"{"a":3,"b":2}"#);
        let many: Vec<String> = (0..100).map(|i| format!("\"k{}\":{}", i % 10, i)).collect();
        let v = ok(&format!("{{{}}}", many.join(",")));
        assert_eq!(v.as_object().unwrap().len(), 10);
        assert_eq!(v["k3"].as_i64(), Some(93));
        assert_eq!(v.as_object().unwrap().keys().next(), Some("k0"));
    }

    #[test]
    fn numbers() {
        assert_eq!(ok("12").as_i64(), Some(12));
        assert_eq!(ok("-12").as_u64(), None);
        assert_eq!(ok("1.0").as_i64(), None);
        assert_eq!(ok("1e2").as_f64(), Some(100.0));
        assert_eq!(ok("1e400").as_f64(), None);
        assert_eq!(ok("18446744073709551615").as_u64(), Some(u64::MAX));
        for (f, s) in [
            (1.0, "1"),
            (-0.5, "-0.5"),
            (0.1, "0.1"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (-2.5e-10, "-2.5e-10"),
            (0.0, "0"),
        ] {
            assert_eq!(Value::from(f).to_string(), s, "{}", f);
        }
        assert_eq!(Value::from(f64::NAN), Value::Null);
    }

    #[test]
    fn escapes_like_go() {
        let s: String = (0u8..0x20).map(|b| b as char).collect::<String>() + "\"\\\u{7f}é\u{2028}";
        assert_eq!(
            Value::from(s).to_string(),
            "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\\\"\\\\\u{7f}é\\u2028\""
        );
    }

    #[test]
    fn objects() {
        let mut o = Object::new().with("a", 1).with("b", "x");
        assert_eq!(o.insert("a", true), Some(Value::from(1)));
        assert_eq!(o.to_string(), r#"{"a":true,"b":"x"}"#);
        assert_eq!(o.get_str("b"), Some("x"));
        assert_eq!(o.remove("a"), Some(Value::Bool(true)));
        assert_eq!(Value::from(o)["b"], Value::from("x"));
        let v: Value = vec![1, 2].into_iter().collect();
        assert_eq!(v[1].as_i64(), Some(2));
        assert_eq!(v[5], Value::Null);
    }
}
