//! The lexer of Go's `text/template` syntax: text between actions, and inside `{{ }}` the tokens
//! of pipelines. Trim markers (`{{- ` and ` -}}`) are applied here, to the neighbouring text, as
//! Go's lexer does; comments (`{{/* */}}`) become nothing.

use super::TemplateError;

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Text(String),
    /// `{{` (the start of an action).
    Open,
    /// `}}`.
    Close,
    /// `.name` (one field of a chain; `.` alone is [`Token::Dot`]).
    Field(String),
    /// `$` or `$name`.
    Variable(String),
    Identifier(String),
    String(String),
    Char(char),
    Number(String),
    Dot,
    Pipe,
    LeftParen,
    RightParen,
    Declare,
    Assign,
    Comma,
    /// Whitespace between operands (it separates arguments).
    Space,
}

/// A token and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Lexed {
    pub token: Token,
    pub line: usize,
}

/// The tokens of `text`.
pub fn lex(name: &str, text: &str) -> Result<Vec<Lexed>, TemplateError> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let mut line = 1;
    let mut trim_next_text = false;
    let error = |line: usize, message: String| TemplateError::Parse {
        name: name.to_string(),
        line,
        message,
    };
    while at < chars.len() {
        // Text up to the next `{{`.
        let start = at;
        while at < chars.len() && !(chars[at] == '{' && chars.get(at + 1) == Some(&'{')) {
            at += 1;
        }
        let mut content: String = chars[start..at].iter().collect();
        let text_line = line;
        line += content.matches('\n').count();
        if trim_next_text {
            content = content.trim_start_matches(is_space).to_string();
            trim_next_text = false;
        }
        if at >= chars.len() {
            if !content.is_empty() {
                tokens.push(Lexed {
                    token: Token::Text(content),
                    line: text_line,
                });
            }
            break;
        }
        // `{{-` followed by a space trims the text before it.
        at += 2;
        if chars.get(at) == Some(&'-') && chars.get(at + 1).is_some_and(|c| is_space(*c)) {
            content = content.trim_end_matches(is_space).to_string();
            at += 1;
        }
        if !content.is_empty() {
            tokens.push(Lexed {
                token: Token::Text(content),
                line: text_line,
            });
        }
        // A comment is the whole action.
        let mut probe = at;
        while probe < chars.len() && is_space(chars[probe]) {
            probe += 1;
        }
        if chars.get(probe) == Some(&'/') && chars.get(probe + 1) == Some(&'*') {
            let body: String = chars[probe..].iter().collect();
            let Some(end) = body.find("*/") else {
                return Err(error(line, "unclosed comment".into()));
            };
            let comment = &body[..end + 2];
            line += comment.matches('\n').count();
            at = probe + comment.chars().count();
            while at < chars.len() && is_space(chars[at]) {
                at += 1;
            }
            if chars.get(at) == Some(&'-') && chars.get(at + 1) == Some(&'}') {
                trim_next_text = true;
                at += 1;
            }
            if !(chars.get(at) == Some(&'}') && chars.get(at + 1) == Some(&'}')) {
                return Err(error(line, "comment ends before closing delimiter".into()));
            }
            at += 2;
            continue;
        }
        tokens.push(Lexed {
            token: Token::Open,
            line,
        });
        // The action's tokens, up to `}}` (or ` -}}`).
        loop {
            let Some(&c) = chars.get(at) else {
                return Err(error(line, "unclosed action".into()));
            };
            if is_space(c) {
                let space_start = at;
                while at < chars.len() && is_space(chars[at]) {
                    if chars[at] == '\n' {
                        line += 1;
                    }
                    at += 1;
                }
                if chars.get(at) == Some(&'-')
                    && chars.get(at + 1) == Some(&'}')
                    && chars.get(at + 2) == Some(&'}')
                {
                    trim_next_text = true;
                    at += 3;
                    tokens.push(Lexed {
                        token: Token::Close,
                        line,
                    });
                    break;
                }
                if at > space_start {
                    tokens.push(Lexed {
                        token: Token::Space,
                        line,
                    });
                }
                continue;
            }
            if c == '}' && chars.get(at + 1) == Some(&'}') {
                at += 2;
                tokens.push(Lexed {
                    token: Token::Close,
                    line,
                });
                break;
            }
            let token = match c {
                '|' => {
                    at += 1;
                    Token::Pipe
                }
                '(' => {
                    at += 1;
                    Token::LeftParen
                }
                ')' => {
                    at += 1;
                    Token::RightParen
                }
                ',' => {
                    at += 1;
                    Token::Comma
                }
                ':' if chars.get(at + 1) == Some(&'=') => {
                    at += 2;
                    Token::Declare
                }
                '=' => {
                    at += 1;
                    Token::Assign
                }
                '"' => {
                    let (value, next) =
                        quoted(&chars, at).map_err(|message| error(line, message))?;
                    at = next;
                    Token::String(value)
                }
                '`' => {
                    let rest: String = chars[at + 1..].iter().collect();
                    let Some(end) = rest.find('`') else {
                        return Err(error(line, "unterminated raw quoted string".into()));
                    };
                    let value = rest[..end].to_string();
                    line += value.matches('\n').count();
                    at += value.chars().count() + 2;
                    Token::String(value)
                }
                '\'' => {
                    let (value, next) =
                        character(&chars, at).map_err(|message| error(line, message))?;
                    at = next;
                    Token::Char(value)
                }
                '$' => {
                    let start = at;
                    at += 1;
                    while at < chars.len() && is_alphanumeric(chars[at]) {
                        at += 1;
                    }
                    Token::Variable(chars[start..at].iter().collect())
                }
                '.' if chars.get(at + 1).is_some_and(|c| c.is_ascii_digit()) => {
                    let (number, next) = number(&chars, at);
                    at = next;
                    Token::Number(number)
                }
                '.' => {
                    at += 1;
                    let start = at;
                    while at < chars.len() && is_alphanumeric(chars[at]) {
                        at += 1;
                    }
                    if at == start {
                        Token::Dot
                    } else {
                        Token::Field(chars[start..at].iter().collect())
                    }
                }
                '+' | '-' | '0'..='9' => {
                    let (number, next) = number(&chars, at);
                    if next == at + 1 && !c.is_ascii_digit() {
                        return Err(error(line, format!("bad character {c:?}")));
                    }
                    at = next;
                    Token::Number(number)
                }
                c if is_alphanumeric(c) => {
                    let start = at;
                    while at < chars.len() && is_alphanumeric(chars[at]) {
                        at += 1;
                    }
                    Token::Identifier(chars[start..at].iter().collect())
                }
                other => return Err(error(line, format!("bad character {other:?}"))),
            };
            tokens.push(Lexed { token, line });
        }
    }
    Ok(tokens)
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// A number as Go's lexer takes one (sign, `0x`/`0o`/`0b`, digits with `_`, fraction, exponent).
fn number(chars: &[char], mut at: usize) -> (String, usize) {
    let start = at;
    if matches!(chars.get(at), Some('+') | Some('-')) {
        at += 1;
    }
    while at < chars.len()
        && (chars[at].is_ascii_alphanumeric()
            || chars[at] == '_'
            || chars[at] == '.'
            || ((chars[at] == '+' || chars[at] == '-')
                && matches!(
                    chars.get(at - 1),
                    Some('e') | Some('E') | Some('p') | Some('P')
                )))
    {
        at += 1;
    }
    (chars[start..at].iter().collect(), at)
}

/// One escape after a backslash; returns the character and the next position.
fn escape(chars: &[char], at: usize, quote: char) -> Result<(char, usize), String> {
    let Some(&c) = chars.get(at) else {
        return Err("unterminated quoted string".into());
    };
    let hex = |from: usize, count: usize| -> Result<(char, usize), String> {
        let digits: String = chars
            .get(from..from + count)
            .unwrap_or(&[])
            .iter()
            .collect();
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .map(|c| (c, from + count))
            .ok_or_else(|| format!("invalid escape \\{c}{digits}"))
    };
    Ok(match c {
        'n' => ('\n', at + 1),
        't' => ('\t', at + 1),
        'r' => ('\r', at + 1),
        'a' => ('\u{7}', at + 1),
        'b' => ('\u{8}', at + 1),
        'f' => ('\u{c}', at + 1),
        'v' => ('\u{b}', at + 1),
        '\\' => ('\\', at + 1),
        'x' => return hex(at + 1, 2),
        'u' => return hex(at + 1, 4),
        'U' => return hex(at + 1, 8),
        '0'..='7' => {
            let digits: String = chars.get(at..at + 3).unwrap_or(&[]).iter().collect();
            let value = u32::from_str_radix(&digits, 8)
                .map_err(|_| format!("invalid escape \\{digits}"))?;
            (char::from_u32(value).ok_or("invalid escape")?, at + 3)
        }
        c if c == quote => (c, at + 1),
        other => return Err(format!("unknown escape sequence \\{other}")),
    })
}

fn quoted(chars: &[char], at: usize) -> Result<(String, usize), String> {
    let mut value = String::new();
    let mut at = at + 1;
    loop {
        match chars.get(at) {
            None | Some('\n') => return Err("unterminated quoted string".into()),
            Some('"') => return Ok((value, at + 1)),
            Some('\\') => {
                let (c, next) = escape(chars, at + 1, '"')?;
                value.push(c);
                at = next;
            }
            Some(&c) => {
                value.push(c);
                at += 1;
            }
        }
    }
}

fn character(chars: &[char], at: usize) -> Result<(char, usize), String> {
    let (c, next) = match chars.get(at + 1) {
        Some('\\') => escape(chars, at + 2, '\'')?,
        Some(&c) if c != '\'' && c != '\n' => (c, at + 2),
        _ => return Err("malformed character constant".into()),
    };
    match chars.get(next) {
        Some('\'') => Ok((c, next + 1)),
        _ => Err("malformed character constant".into()),
    }
}
