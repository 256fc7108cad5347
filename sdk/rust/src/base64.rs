//! Standard base64 (RFC 4648, with padding): the encoding of bodies in the
//! station's documents, as Go's `encoding/json` writes a `[]byte`.

use std::fmt;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The base64 of `data`, with padding.
pub fn encode(data: &[u8]) -> String {
    let mut out = String::with_capacity((data.len() + 2) / 3 * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why [`decode`] refused its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    offset: usize,
}

impl DecodeError {
    /// The offset of the first byte that is wrong (the length of the input
    /// when it is cut short).
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "illegal base64 data at input byte {}", self.offset)
    }
}

impl std::error::Error for DecodeError {}

fn value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Decodes standard base64 with padding. Line breaks (`\r`, `\n`) are
/// skipped, as Go's decoder skips them; any other byte outside the
/// alphabet, missing padding or data after the padding is an error.
pub fn decode(text: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut quad = [0u32; 4];
    let mut n = 0; // symbols in quad
    let mut pad = 0; // '=' seen
    for (i, &c) in text.iter().enumerate() {
        if c == b'\r' || c == b'\n' {
            continue;
        }
        if c == b'=' {
            // Padding completes a quad of two or three symbols.
            if n < 2 || n + pad >= 4 {
                return Err(DecodeError { offset: i });
            }
            pad += 1;
            continue;
        }
        if pad > 0 {
            return Err(DecodeError { offset: i });
        }
        quad[n] = value(c).ok_or(DecodeError { offset: i })?;
        n += 1;
        if n == 4 {
            let v = quad[0] << 18 | quad[1] << 12 | quad[2] << 6 | quad[3];
            out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]);
            n = 0;
        }
    }
    match (n, pad) {
        (0, 0) => {}
        (2, 2) => out.push((quad[0] << 2 | quad[1] >> 4) as u8),
        (3, 1) => {
            let v = quad[0] << 18 | quad[1] << 12 | quad[2] << 6;
            out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8]);
        }
        _ => return Err(DecodeError { offset: text.len() }),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded.as_bytes()).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(encode(&all).as_bytes()).unwrap(), all);
        assert_eq!(decode(b"Zm9v\r\nYmFy").unwrap(), b"foobar");
    }

    #[test]
    fn refuses() {
        for bad in [
            "Zg",
            "Zg=",
            "Zm8",
            "Z===",
            "Zg==Zg==",
            "Zm9v!",
            "Zm9v YmFy",
            "Zm9vY",
            "=",
            "Zg=a",
        ] {
            assert!(decode(bad.as_bytes()).is_err(), "{}", bad);
        }
    }
}
