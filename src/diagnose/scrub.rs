//! Secrets out of every file of a diagnostics bundle: whatever a command printed, a log said or an
//! object held passes through a [`Scrubber`] line by line before it is written.
//!
//! Three rules, each replacing what it finds with [`REDACTED`]:
//! - **known secrets**: the values netctl itself holds (the etcd password, the etcd client key and
//!   the Kubernetes client key and token named by its configuration, every line of them) and, in a
//!   cluster bundle, the values of the Secrets it read — as written and base64-encoded. Values
//!   shorter than [`MIN_KNOWN_SECRET`] bytes are not searched for (`true` would blank every file);
//!   the other rules still apply to them;
//! - **private keys**: a PEM private-key block, on its own lines or inside one (a JSON string), and
//!   a base64-encoded one (a kubeconfig's `client-key-data`);
//! - **secret assignments**: `NAME=value` and `NAME: value` where the name says password, token,
//!   secret or credential (`redaction::looks_secret`'s words without `key`, which would blank every
//!   `key 16B` of a BPF map listing), and `Authorization: Bearer …` headers.
//!
//! It does not know the bundle's layout; [`super::bundle`] sends every file through it.

use std::io::{self, Write};

use regex::bytes::{Regex, RegexBuilder};

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Known secrets shorter than this are not searched for.
pub const MIN_KNOWN_SECRET: usize = 6;

/// The PEM headers of private keys, whose base64 forms are searched for.
const PRIVATE_KEY_HEADERS: [&str; 5] = [
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
];

/// The rules of one bundle (see the module comment).
#[derive(Debug, Clone)]
pub struct Scrubber {
    known: Option<Regex>,
    rules: Rules,
    /// Whether the secret-assignment rule applies (not to Kubernetes objects, which are censored
    /// field by field and where it would blank `secretName:` and `automountServiceAccountToken:`).
    assignments: bool,
}

#[derive(Debug, Clone)]
struct Rules {
    /// A whole PEM private-key block within one line.
    inline_key: Regex,
    /// The first line of a PEM private-key block.
    key_begins: Regex,
    /// The last line of one.
    key_ends: Regex,
    /// A base64-encoded PEM private key.
    encoded_key: Regex,
    /// `NAME=value` / `NAME: value` / `"NAME": "value"` with a secret-looking name.
    assignment: Regex,
    /// `Authorization: Bearer …`.
    authorization: Regex,
}

impl Rules {
    fn new() -> Rules {
        let encoded: Vec<String> = PRIVATE_KEY_HEADERS
            .iter()
            .map(|header| {
                // Only whole 3-byte groups encode the same whatever follows.
                let bytes = header.as_bytes();
                regex::escape(&base64(&bytes[..bytes.len() / 3 * 3]))
            })
            .collect();
        Rules {
            inline_key: Regex::new(
                r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
            )
            .expect("a valid pattern"),
            key_begins: Regex::new(r"-----BEGIN [A-Z ]*PRIVATE KEY-----").expect("a valid pattern"),
            key_ends: Regex::new(r"-----END [A-Z ]*PRIVATE KEY-----").expect("a valid pattern"),
            encoded_key: Regex::new(&format!("(?:{})[A-Za-z0-9+/=]*", encoded.join("|")))
                .expect("a valid pattern"),
            assignment: RegexBuilder::new(
                r#"(["']?[A-Za-z0-9_.-]*(?:password|passwd|secret|token|credential)[A-Za-z0-9_.-]*["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&"'}]+)"#,
            )
            .case_insensitive(true)
            .build()
            .expect("a valid pattern"),
            authorization: RegexBuilder::new(r"(authorization:\s*(?:bearer|basic)\s+)[^\s,;]+")
                .case_insensitive(true)
                .build()
                .expect("a valid pattern"),
        }
    }
}

impl Default for Scrubber {
    fn default() -> Self {
        Scrubber::new(Vec::<String>::new())
    }
}

impl Scrubber {
    /// The rules, with `secrets` as the known secrets (each line of each, and its base64 form).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Scrubber {
        let mut needles: Vec<String> = Vec::new();
        for secret in secrets {
            let mut add = |value: &str| {
                let value = value.trim();
                if value.len() >= MIN_KNOWN_SECRET && !needles.iter().any(|known| known == value) {
                    needles.push(value.to_string());
                }
            };
            add(&base64(secret.as_bytes()));
            add(&base64(secret.trim().as_bytes()));
            for line in secret.lines() {
                add(line);
            }
            add(&secret);
        }
        // Longest first, so a secret that contains another is replaced whole.
        needles.sort_by_key(|needle| std::cmp::Reverse(needle.len()));
        let known = (!needles.is_empty()).then(|| {
            let alternatives: Vec<String> = needles.iter().map(|n| regex::escape(n)).collect();
            Regex::new(&alternatives.join("|")).expect("escaped literals form a valid pattern")
        });
        Scrubber {
            known,
            rules: Rules::new(),
            assignments: true,
        }
    }

    /// The same rules without the secret-assignment one, for Kubernetes objects.
    pub fn for_objects(&self) -> Scrubber {
        Scrubber {
            assignments: false,
            ..self.clone()
        }
    }

    /// `text` scrubbed whole (for short texts: reasons, command lines).
    pub fn scrub_text(&self, text: &str) -> String {
        let mut out = Vec::new();
        let mut writer = ScrubWriter::new(&mut out, self.clone());
        let _ = writer.write_all(text.as_bytes());
        let _ = writer.finish();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// One line (without its line break), given whether a PEM private-key block is open. Returns
    /// whether the line is kept (the lines inside a block are not: its first line says
    /// [`REDACTED`]).
    fn scrub_line(&self, line: &[u8], in_key: &mut bool, out: &mut Vec<u8>) -> bool {
        let rules = &self.rules;
        if *in_key {
            let Some(end) = rules.key_ends.find(line) else {
                return false;
            };
            *in_key = false;
            let rest = &line[end.end()..];
            if rest.iter().all(u8::is_ascii_whitespace) {
                return false;
            }
            return self.scrub_line(rest, in_key, out);
        }
        let mut text = rules
            .inline_key
            .replace_all(line, REDACTED.as_bytes())
            .into_owned();
        if let Some(begin) = rules.key_begins.find(&text) {
            // A block that goes on over the next lines: keep what came before it.
            *in_key = true;
            text.truncate(begin.start());
            text.extend_from_slice(REDACTED.as_bytes());
        }
        let mut text = rules
            .encoded_key
            .replace_all(&text, REDACTED.as_bytes())
            .into_owned();
        if let Some(known) = &self.known {
            text = known.replace_all(&text, REDACTED.as_bytes()).into_owned();
        }
        if self.assignments {
            text = rules
                .assignment
                .replace_all(&text, |captures: &regex::bytes::Captures| {
                    let mut kept = captures[1].to_vec();
                    kept.extend_from_slice(REDACTED.as_bytes());
                    kept
                })
                .into_owned();
        }
        let text = rules
            .authorization
            .replace_all(&text, |captures: &regex::bytes::Captures| {
                let mut kept = captures[1].to_vec();
                kept.extend_from_slice(REDACTED.as_bytes());
                kept
            });
        out.extend_from_slice(&text);
        true
    }
}

/// A writer that scrubs what passes through it, a line at a time, and stops writing (counting on)
/// past a byte limit. [`ScrubWriter::finish`] must be called to write the last line.
pub struct ScrubWriter<W: Write> {
    inner: W,
    scrubber: Scrubber,
    line: Vec<u8>,
    in_key: bool,
    limit: Option<u64>,
    written: u64,
    truncated: bool,
}

/// A line longer than this is scrubbed and written in pieces (a whole log on one line must not be
/// held in memory).
const LONGEST_LINE: usize = 1 << 20;

impl<W: Write> ScrubWriter<W> {
    pub fn new(inner: W, scrubber: Scrubber) -> ScrubWriter<W> {
        ScrubWriter {
            inner,
            scrubber,
            line: Vec::new(),
            in_key: false,
            limit: None,
            written: 0,
            truncated: false,
        }
    }

    /// Writes at most `limit` bytes; the rest is dropped and [`ScrubWriter::truncated`] says so.
    pub fn with_limit(mut self, limit: u64) -> ScrubWriter<W> {
        self.limit = Some(limit);
        self
    }

    /// Whether the limit cut the output.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn emit_line(&mut self, with_break: bool) -> io::Result<()> {
        let mut out = Vec::with_capacity(self.line.len() + 1);
        let kept = self
            .scrubber
            .scrub_line(&self.line, &mut self.in_key, &mut out);
        if with_break && kept {
            out.push(b'\n');
        }
        self.line.clear();
        let allowed = match self.limit {
            Some(limit) => limit.saturating_sub(self.written).min(out.len() as u64) as usize,
            None => out.len(),
        };
        if allowed < out.len() {
            self.truncated = true;
        }
        self.inner.write_all(&out[..allowed])?;
        self.written += allowed as u64;
        Ok(())
    }

    /// Writes the last, unfinished line and flushes; returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if !self.line.is_empty() {
            self.emit_line(false)?;
        }
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ScrubWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let mut rest = buffer;
        while let Some(end) = rest.iter().position(|&byte| byte == b'\n') {
            self.line.extend_from_slice(&rest[..end]);
            self.emit_line(true)?;
            rest = &rest[end + 1..];
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > LONGEST_LINE {
            self.emit_line(false)?;
        }
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Standard base64 with padding (RFC 4648), for the encoded forms searched for.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5yjd3vcsNHjq5oAoGCCqGSM49\nAwEHoUQDQgAE7dRVbr3l1NEsbkZ3fFfnEjTE6lS/kpaPkyn1Yx2jVtJpjuzBxpDa\n-----END EC PRIVATE KEY-----\n";

    fn scrubbed(scrubber: &Scrubber, text: &str) -> String {
        scrubber.scrub_text(text)
    }

    #[test]
    fn private_keys_go_whole_on_their_own_lines_inside_a_string_and_base64_encoded() {
        let scrubber = Scrubber::default();
        let text = format!("before\n{KEY}after\n");
        assert_eq!(scrubbed(&scrubber, &text), "before\n<redacted>\nafter\n");
        let json = format!("{{\"key\": {}}}", serde_json::to_string(KEY).unwrap());
        let out = scrubbed(&scrubber, &json);
        assert!(!out.contains("MHcCAQEE"), "{out}");
        assert!(out.starts_with("{\"key\": \"<redacted>"), "{out}");
        let encoded = format!("    client-key-data: {}\n", base64(KEY.as_bytes()));
        assert_eq!(
            scrubbed(&scrubber, &encoded),
            "    client-key-data: <redacted>\n"
        );
    }

    #[test]
    fn known_secrets_go_as_written_and_base64_encoded_but_short_ones_are_not_searched() {
        let scrubber = Scrubber::new(["s3cr3t-etcd-pass".to_string(), "true".to_string()]);
        let text = format!(
            "pw s3cr3t-etcd-pass in a log\nencoded {}\ntrue stays\n",
            base64(b"s3cr3t-etcd-pass")
        );
        assert_eq!(
            scrubbed(&scrubber, &text),
            "pw <redacted> in a log\nencoded <redacted>\ntrue stays\n"
        );
    }

    #[test]
    fn secret_assignments_lose_their_values_but_keys_and_paths_stay() {
        let scrubber = Scrubber::default();
        assert_eq!(
            scrubbed(
                &scrubber,
                "ETCD_PASSWORD=hunter22 ETCD_KEY_FILE=/etc/k.pem\n"
            ),
            "ETCD_PASSWORD=<redacted> ETCD_KEY_FILE=/etc/k.pem\n"
        );
        assert_eq!(
            scrubbed(&scrubber, "  \"token\": \"abc.def\",\n  password: x1\n"),
            "  \"token\": <redacted>,\n  password: <redacted>\n"
        );
        assert_eq!(
            scrubbed(&scrubber, "Authorization: Bearer eyJhbGciOi\n"),
            "Authorization: Bearer <redacted>\n"
        );
        let map = "35: lru_hash  name cali_v4_srmsg  flags 0x0\n\tkey 16B  value 8B\n";
        assert_eq!(scrubbed(&scrubber, map), map);
    }

    #[test]
    fn the_limit_cuts_and_says_so() {
        let mut out = Vec::new();
        let mut writer = ScrubWriter::new(&mut out, Scrubber::default()).with_limit(10);
        writer.write_all(b"0123456789abcdef\nmore\n").unwrap();
        assert!(writer.truncated());
        assert_eq!(writer.written(), 10);
        writer.finish().unwrap();
        assert_eq!(out, b"0123456789");
    }

    #[test]
    fn base64_matches_rfc_4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
