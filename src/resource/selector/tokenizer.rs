//! Splits selector text into tokens, one at a time, as the parser asks for them.
//!
//! Lexing is lazy so that the first mistake in reading order is the one reported, whether it is a
//! lexical one (`&` without a second `&`) or a grammatical one (a label where a string belongs). The
//! token set and the lexical rules follow upstream
//! (`libcalico-go/lib/selector/tokenizer/tokenizer.go`): only space and tab separate tokens, string
//! literals have no escapes, a label is the longest run of
//! `[a-zA-Z0-9_./-]` (at most 512 characters) and must be followed by an operator. This module knows
//! nothing of the grammar beyond that last rule; building the tree is the parser's job.

use super::SelectorErrorKind;

/// The longest label key upstream accepts.
pub const MAX_LABEL_LENGTH: usize = 512;

/// What a token is, borrowing its text from the selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TokenKind<'a> {
    Label(&'a str),
    /// The contents of a string literal, without its quotes.
    String(&'a str),
    /// `has(label)`, carrying the label.
    Has(&'a str),
    All,
    Global,
    LeftParen,
    RightParen,
    LeftBrace,
    RightBrace,
    Comma,
    Equals,
    NotEquals,
    Contains,
    StartsWith,
    EndsWith,
    In,
    NotIn,
    Not,
    And,
    Or,
    End,
}

impl TokenKind<'_> {
    /// How the token is named in an error message.
    pub(super) fn describe(&self) -> String {
        match self {
            TokenKind::Label(label) => format!("label `{label}`"),
            TokenKind::String(value) => format!("string {}", super::quote(value)),
            TokenKind::Has(label) => format!("`has({label})`"),
            TokenKind::All => "`all()`".to_string(),
            TokenKind::Global => "`global()`".to_string(),
            TokenKind::LeftParen => "`(`".to_string(),
            TokenKind::RightParen => "`)`".to_string(),
            TokenKind::LeftBrace => "`{`".to_string(),
            TokenKind::RightBrace => "`}`".to_string(),
            TokenKind::Comma => "`,`".to_string(),
            TokenKind::Equals => "`==`".to_string(),
            TokenKind::NotEquals => "`!=`".to_string(),
            TokenKind::Contains => "`contains`".to_string(),
            TokenKind::StartsWith => "`starts with`".to_string(),
            TokenKind::EndsWith => "`ends with`".to_string(),
            TokenKind::In => "`in`".to_string(),
            TokenKind::NotIn => "`not in`".to_string(),
            TokenKind::Not => "`!`".to_string(),
            TokenKind::And => "`&&`".to_string(),
            TokenKind::Or => "`||`".to_string(),
            TokenKind::End => "the end of the selector".to_string(),
        }
    }
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Token<'a> {
    pub(super) kind: TokenKind<'a>,
    pub(super) offset: usize,
}

/// A lexical mistake: what went wrong and the byte offset where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LexError {
    pub(super) offset: usize,
    pub(super) kind: SelectorErrorKind,
}

pub(super) struct Tokenizer<'a> {
    input: &'a str,
    position: usize,
    /// Set right after a label: the next token must be an operator (or the end, which the parser
    /// then reports with more context).
    after_label: Option<&'a str>,
}

impl<'a> Tokenizer<'a> {
    pub(super) fn new(input: &'a str) -> Tokenizer<'a> {
        Tokenizer {
            input,
            position: 0,
            after_label: None,
        }
    }

    fn rest(&self) -> &'a str {
        &self.input[self.position..]
    }

    fn skip_whitespace(&mut self) {
        let rest = self.rest();
        let trimmed = rest.trim_start_matches([' ', '\t']);
        self.position += rest.len() - trimmed.len();
    }

    fn token(&mut self, kind: TokenKind<'a>, length: usize) -> Token<'a> {
        let offset = self.position;
        self.position += length;
        Token { kind, offset }
    }

    fn error(&self, kind: SelectorErrorKind) -> LexError {
        LexError {
            offset: self.position,
            kind,
        }
    }

    /// The next token; [`TokenKind::End`] once the input is used up (and on every call after).
    pub(super) fn next_token(&mut self) -> Result<Token<'a>, LexError> {
        self.skip_whitespace();
        let rest = self.rest();
        if rest.is_empty() {
            return Ok(Token {
                kind: TokenKind::End,
                offset: self.position,
            });
        }
        if let Some(label) = self.after_label.take() {
            return self.operator_after_label(label);
        }
        let bytes = rest.as_bytes();
        let second = bytes.get(1).copied();
        match bytes[0] {
            b'(' => Ok(self.token(TokenKind::LeftParen, 1)),
            b')' => Ok(self.token(TokenKind::RightParen, 1)),
            b'{' => Ok(self.token(TokenKind::LeftBrace, 1)),
            b'}' => Ok(self.token(TokenKind::RightBrace, 1)),
            b',' => Ok(self.token(TokenKind::Comma, 1)),
            quote @ (b'"' | b'\'') => match rest[1..].find(quote as char) {
                Some(end) => Ok(self.token(TokenKind::String(&rest[1..1 + end]), end + 2)),
                None => Err(self.error(SelectorErrorKind::UnterminatedString)),
            },
            b'=' if second == Some(b'=') => Ok(self.token(TokenKind::Equals, 2)),
            b'=' => Err(self.error(SelectorErrorKind::ExpectedDoubleEquals)),
            b'!' if second == Some(b'=') => Ok(self.token(TokenKind::NotEquals, 2)),
            b'!' => Ok(self.token(TokenKind::Not, 1)),
            b'&' if second == Some(b'&') => Ok(self.token(TokenKind::And, 2)),
            b'&' => Err(self.error(SelectorErrorKind::ExpectedDoubleAmpersand)),
            b'|' if second == Some(b'|') => Ok(self.token(TokenKind::Or, 2)),
            b'|' => Err(self.error(SelectorErrorKind::ExpectedDoublePipe)),
            _ => self.function_or_label(),
        }
    }

    fn function_or_label(&mut self) -> Result<Token<'a>, LexError> {
        let rest = self.rest();
        if let Some(arguments) = rest.strip_prefix("has(") {
            return match parse_has_arguments(arguments) {
                Some((label, length)) => Ok(self.token(TokenKind::Has(label), 4 + length)),
                None => Err(self.error(SelectorErrorKind::MalformedFunction {
                    expected: "has(<label>)",
                })),
            };
        }
        for (name, kind, expected) in [
            ("all(", TokenKind::All, "all()"),
            ("global(", TokenKind::Global, "global()"),
        ] {
            if let Some(arguments) = rest.strip_prefix(name) {
                let inside = arguments.trim_start_matches(is_regex_space);
                return match inside.strip_prefix(')') {
                    Some(after) => Ok(self.token(kind, rest.len() - after.len())),
                    None => Err(self.error(SelectorErrorKind::MalformedFunction { expected })),
                };
            }
        }
        let length = label_length(rest);
        if length == 0 {
            return Err(self.error(SelectorErrorKind::UnexpectedCharacters));
        }
        if length > MAX_LABEL_LENGTH {
            return Err(self.error(SelectorErrorKind::LabelTooLong));
        }
        let label = &rest[..length];
        self.after_label = Some(label);
        Ok(self.token(TokenKind::Label(label), length))
    }

    /// Right after a label only an operator may follow (upstream's rule, which is what makes
    /// `a b` an error at `b` rather than two labels).
    fn operator_after_label(&mut self, label: &'a str) -> Result<Token<'a>, LexError> {
        let rest = self.rest();
        if rest.starts_with("==") {
            return Ok(self.token(TokenKind::Equals, 2));
        }
        if rest.starts_with("!=") {
            return Ok(self.token(TokenKind::NotEquals, 2));
        }
        if rest.starts_with('=') {
            return Err(self.error(SelectorErrorKind::ExpectedDoubleEquals));
        }
        if let Some(after) = rest.strip_prefix("contains") {
            return Ok(self.token(TokenKind::Contains, rest.len() - after.len()));
        }
        if let Some(length) = two_words(rest, "starts", "with", false) {
            return Ok(self.token(TokenKind::StartsWith, length));
        }
        if let Some(length) = two_words(rest, "ends", "with", false) {
            return Ok(self.token(TokenKind::EndsWith, length));
        }
        if let Some(length) = two_words(rest, "not", "in", true) {
            return Ok(self.token(TokenKind::NotIn, length));
        }
        if rest.starts_with("in") && at_word_boundary(&rest[2..]) {
            return Ok(self.token(TokenKind::In, 2));
        }
        Err(self.error(SelectorErrorKind::ExpectedOperator {
            label: label.to_string(),
        }))
    }
}

/// Go's `\s` in the upstream regular expressions: used only inside keywords and function forms, where
/// upstream allows it; between tokens only space and tab count.
fn is_regex_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\n' | '\x0c' | '\r')
}

fn is_label_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'/' | b'-')
}

/// The length of the run of label characters at the start of `text` (unbounded; the caller checks
/// the maximum so that an over-long label gets its own message).
fn label_length(text: &str) -> usize {
    text.bytes().take_while(|byte| is_label_byte(*byte)).count()
}

/// Whether a `\b` would match here, given that the previous character was a word character.
fn at_word_boundary(after: &str) -> bool {
    after
        .bytes()
        .next()
        .is_none_or(|byte| !(byte.is_ascii_alphanumeric() || byte == b'_'))
}

/// Matches `first\s*second` (plus `\b` when `boundary`) and returns its length.
fn two_words(text: &str, first: &str, second: &str, boundary: bool) -> Option<usize> {
    let after_first = text.strip_prefix(first)?;
    let after_space = after_first.trim_start_matches(is_regex_space);
    let after_second = after_space.strip_prefix(second)?;
    if boundary && !at_word_boundary(after_second) {
        return None;
    }
    Some(text.len() - after_second.len())
}

/// Parses what follows `has(`: `\s*label\s*)`. Returns the label and the length consumed.
fn parse_has_arguments(arguments: &str) -> Option<(&str, usize)> {
    let inside = arguments.trim_start_matches(is_regex_space);
    let leading = arguments.len() - inside.len();
    let length = label_length(inside);
    if length == 0 || length > MAX_LABEL_LENGTH {
        return None;
    }
    let after_label = inside[length..].trim_start_matches(is_regex_space);
    let after = after_label.strip_prefix(')')?;
    Some((&inside[..length], leading + (inside.len() - after.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Vec<TokenKind<'_>> {
        let mut tokenizer = Tokenizer::new(input);
        let mut kinds = Vec::new();
        loop {
            let token = tokenizer.next_token().expect("lexes");
            kinds.push(token.kind);
            if token.kind == TokenKind::End {
                return kinds;
            }
        }
    }

    #[test]
    fn keywords_after_a_label_allow_inner_whitespace() {
        assert_eq!(
            kinds("a startswith 'x'"),
            [
                TokenKind::Label("a"),
                TokenKind::StartsWith,
                TokenKind::String("x"),
                TokenKind::End
            ]
        );
        assert_eq!(
            kinds("a not  in{}"),
            [
                TokenKind::Label("a"),
                TokenKind::NotIn,
                TokenKind::LeftBrace,
                TokenKind::RightBrace,
                TokenKind::End
            ]
        );
    }

    #[test]
    fn a_label_is_the_longest_run_of_label_characters() {
        assert_eq!(
            kinds("a.b/c-d_e==\"\""),
            [
                TokenKind::Label("a.b/c-d_e"),
                TokenKind::Equals,
                TokenKind::String(""),
                TokenKind::End
            ]
        );
    }

    #[test]
    fn function_forms_allow_inner_whitespace() {
        assert_eq!(
            kinds("has( a.b )&&all( )||global()"),
            [
                TokenKind::Has("a.b"),
                TokenKind::And,
                TokenKind::All,
                TokenKind::Or,
                TokenKind::Global,
                TokenKind::End
            ]
        );
    }

    #[test]
    fn in_needs_a_word_boundary() {
        let mut tokenizer = Tokenizer::new("a inx {}");
        tokenizer.next_token().expect("label");
        let error = tokenizer.next_token().unwrap_err();
        assert_eq!(error.offset, 2);
    }
}
