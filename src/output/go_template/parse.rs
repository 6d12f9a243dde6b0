//! The parser of Go's `text/template`: actions, pipelines, commands and operands into a tree;
//! `if`/`range`/`with` (with `else` and `else if`/`else with`), `define`, `template`, `block`,
//! `break` and `continue`; variables declared (`:=`) and assigned (`=`).

use std::collections::BTreeMap;

use super::TemplateError;
use super::lex::{Lexed, Token};

/// A list of nodes.
pub type List = Vec<Node>;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Text(String),
    Action(Pipe),
    If(Branch),
    Range(Branch),
    With(Branch),
    Template {
        name: String,
        pipe: Option<Pipe>,
        line: usize,
    },
    Break,
    Continue,
}

/// The pipeline and the two lists of `if`, `range` and `with`.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub pipe: Pipe,
    pub list: List,
    pub otherwise: Option<List>,
}

/// `[$a, $b :=] command | command ...`
#[derive(Debug, Clone, PartialEq)]
pub struct Pipe {
    pub line: usize,
    pub variables: Vec<String>,
    pub assign: bool,
    pub commands: Vec<Command>,
    /// The action's text, for error messages (`<.a.b>`).
    pub text: String,
}

/// A function or a value and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub args: Vec<Operand>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Dot,
    /// `.a.b`
    Field(Vec<String>),
    /// `$x.a.b`
    Variable(String, Vec<String>),
    /// `(pipeline).a.b`
    Chain(Box<Pipe>, Vec<String>),
    Function(String),
    String(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
}

/// A parsed template: the main list and the named ones (`define`, `block`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub main: List,
    pub defined: BTreeMap<String, List>,
}

struct Parser<'a> {
    name: &'a str,
    tokens: Vec<Lexed>,
    at: usize,
    defined: BTreeMap<String, List>,
    /// How deep inside `range` we are (`break`/`continue` need one).
    ranges: usize,
    functions: &'a [&'a str],
}

/// How a list ended.
enum Ending {
    Eof,
    End,
    Else,
}

/// Parses `tokens`; `functions` are the names a template may call.
pub fn parse(name: &str, tokens: Vec<Lexed>, functions: &[&str]) -> Result<Tree, TemplateError> {
    let mut parser = Parser {
        name,
        tokens,
        at: 0,
        defined: BTreeMap::new(),
        ranges: 0,
        functions,
    };
    let (main, end) = parser.list()?;
    match end {
        Ending::Eof => Ok(Tree {
            main,
            defined: parser.defined,
        }),
        Ending::End => Err(parser.error("unexpected {{end}}")),
        Ending::Else => Err(parser.error("unexpected {{else}}")),
    }
}

impl Parser<'_> {
    fn line(&self) -> usize {
        self.tokens
            .get(self.at.min(self.tokens.len().saturating_sub(1)))
            .map_or(1, |lexed| lexed.line)
    }

    fn error(&self, message: impl Into<String>) -> TemplateError {
        TemplateError::Parse {
            name: self.name.to_string(),
            line: self.line(),
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|lexed| &lexed.token)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).map(|lexed| lexed.token.clone());
        self.at += 1;
        token
    }

    fn skip_space(&mut self) {
        while self.peek() == Some(&Token::Space) {
            self.at += 1;
        }
    }

    fn expect_close(&mut self, context: &str) -> Result<(), TemplateError> {
        self.skip_space();
        match self.next() {
            Some(Token::Close) => Ok(()),
            _ => Err(self.error(format!("unexpected token in {context}"))),
        }
    }

    /// Nodes up to `{{end}}`, `{{else}}` or the end of input.
    fn list(&mut self) -> Result<(List, Ending), TemplateError> {
        let mut list = Vec::new();
        loop {
            match self.next() {
                None => return Ok((list, Ending::Eof)),
                Some(Token::Text(text)) => list.push(Node::Text(text)),
                Some(Token::Open) => {
                    self.skip_space();
                    let keyword = match self.peek() {
                        Some(Token::Identifier(word)) => Some(word.clone()),
                        _ => None,
                    };
                    match keyword.as_deref() {
                        Some("end") => {
                            self.at += 1;
                            self.expect_close("end")?;
                            return Ok((list, Ending::End));
                        }
                        Some("else") => {
                            self.at += 1;
                            return Ok((list, Ending::Else));
                        }
                        Some("if") => {
                            self.at += 1;
                            list.push(Node::If(self.branch("if")?));
                        }
                        Some("with") => {
                            self.at += 1;
                            list.push(Node::With(self.branch("with")?));
                        }
                        Some("range") => {
                            self.at += 1;
                            self.ranges += 1;
                            let branch = self.branch("range");
                            self.ranges -= 1;
                            list.push(Node::Range(branch?));
                        }
                        Some("define") => {
                            self.at += 1;
                            self.define()?;
                        }
                        Some("block") => {
                            self.at += 1;
                            let line = self.line();
                            let name = self.template_name("block")?;
                            let pipe = self.pipe("block", false)?;
                            let (body, end) = self.list()?;
                            if !matches!(end, Ending::End) {
                                return Err(self.error("missing {{end}} of block"));
                            }
                            self.defined.insert(name.clone(), body);
                            list.push(Node::Template {
                                name,
                                pipe: Some(pipe),
                                line,
                            });
                        }
                        Some("template") => {
                            self.at += 1;
                            let line = self.line();
                            let name = self.template_name("template")?;
                            self.skip_space();
                            let pipe = match self.peek() {
                                Some(Token::Close) => {
                                    self.at += 1;
                                    None
                                }
                                _ => Some(self.pipe("template", false)?),
                            };
                            list.push(Node::Template { name, pipe, line });
                        }
                        Some(word @ ("break" | "continue")) => {
                            let word = word.to_string();
                            if self.ranges == 0 {
                                return Err(
                                    self.error(format!("{{{{{word}}}}} outside {{{{range}}}}"))
                                );
                            }
                            self.at += 1;
                            self.expect_close(&word)?;
                            list.push(if word == "break" {
                                Node::Break
                            } else {
                                Node::Continue
                            });
                        }
                        _ => list.push(Node::Action(self.pipe("command", true)?)),
                    }
                }
                Some(other) => return Err(self.error(format!("unexpected {other:?}"))),
            }
        }
    }

    fn template_name(&mut self, context: &str) -> Result<String, TemplateError> {
        self.skip_space();
        match self.next() {
            Some(Token::String(name)) => Ok(name),
            _ => Err(self.error(format!(
                "unexpected token in {context} clause: expected a quoted name"
            ))),
        }
    }

    fn define(&mut self) -> Result<(), TemplateError> {
        let name = self.template_name("define")?;
        self.expect_close("define clause")?;
        let (body, end) = self.list()?;
        if !matches!(end, Ending::End) {
            return Err(self.error("missing {{end}} of define"));
        }
        self.defined.insert(name, body);
        Ok(())
    }

    /// `if`/`with`/`range` after its keyword: pipeline, list, optional else (or `else if`).
    fn branch(&mut self, context: &str) -> Result<Branch, TemplateError> {
        let pipe = self.pipe(context, true)?;
        let (list, end) = self.list()?;
        let otherwise = match end {
            Ending::End => None,
            Ending::Eof => return Err(self.error(format!("missing {{{{end}}}} of {context}"))),
            Ending::Else => {
                self.skip_space();
                // `{{else if ...}}` / `{{else with ...}}`: a nested branch that shares our end.
                let chained = match self.peek() {
                    Some(Token::Identifier(word))
                        if (word == "if" || word == "with") && context != "range" =>
                    {
                        Some(word.clone())
                    }
                    _ => None,
                };
                match chained {
                    Some(word) => {
                        self.at += 1;
                        let nested = self.branch(&word)?;
                        Some(vec![if word == "if" {
                            Node::If(nested)
                        } else {
                            Node::With(nested)
                        }])
                    }
                    None => {
                        self.expect_close("else")?;
                        let (otherwise, end) = self.list()?;
                        if !matches!(end, Ending::End) {
                            return Err(
                                self.error(format!("expected {{{{end}}}} after else of {context}"))
                            );
                        }
                        Some(otherwise)
                    }
                }
            }
        };
        Ok(Branch {
            pipe,
            list,
            otherwise,
        })
    }

    /// A pipeline up to `}}` (or `)` when nested).
    fn pipe(&mut self, context: &str, allow_declarations: bool) -> Result<Pipe, TemplateError> {
        let line = self.line();
        let start = self.at;
        let mut variables = Vec::new();
        let mut assign = false;
        self.skip_space();
        // `$x :=`, `$x =`, `$i, $e :=`
        if allow_declarations && matches!(self.peek(), Some(Token::Variable(_))) {
            let save = self.at;
            let mut names = Vec::new();
            while let Some(Token::Variable(name)) = self.next() {
                names.push(name);
                self.skip_space();
                match self.peek() {
                    Some(Token::Comma) => {
                        self.at += 1;
                        self.skip_space();
                        continue;
                    }
                    Some(Token::Declare) | Some(Token::Assign) => {
                        assign = self.peek() == Some(&Token::Assign);
                        self.at += 1;
                        variables = names.clone();
                        break;
                    }
                    _ => break,
                }
            }
            if variables.is_empty() {
                self.at = save;
            } else if variables.len() > 2 || (variables.len() == 2 && context != "range") {
                return Err(self.error(format!("too many declarations in {context}")));
            }
        }
        let mut commands = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(Token::Close) if context != "parenthesized pipeline" => {
                    self.at += 1;
                    break;
                }
                Some(Token::RightParen) if context == "parenthesized pipeline" => {
                    self.at += 1;
                    break;
                }
                None => return Err(self.error(format!("unclosed action in {context}"))),
                _ => {}
            }
            commands.push(self.command()?);
            self.skip_space();
            if self.peek() == Some(&Token::Pipe) {
                self.at += 1;
            }
        }
        if commands.is_empty() {
            return Err(self.error(format!("missing value for {context}")));
        }
        let text = self.tokens[start..self.at.saturating_sub(1)]
            .iter()
            .map(|lexed| token_text(&lexed.token))
            .collect::<String>()
            .trim()
            .to_string();
        Ok(Pipe {
            line,
            variables,
            assign,
            commands,
            text,
        })
    }

    /// Operands up to `|`, `}}` or `)`.
    fn command(&mut self) -> Result<Command, TemplateError> {
        let mut args = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None | Some(Token::Close) | Some(Token::Pipe) | Some(Token::RightParen) => break,
                _ => {}
            }
            args.push(self.operand()?);
            // Operands are separated by spaces; anything else right after one is an error.
            match self.peek() {
                Some(Token::Space)
                | Some(Token::Close)
                | Some(Token::Pipe)
                | Some(Token::RightParen)
                | None => {}
                Some(other) => {
                    let other = other.clone();
                    return Err(self.error(format!("unexpected {} in operand", token_text(&other))));
                }
            }
        }
        if args.is_empty() {
            return Err(self.error("empty command"));
        }
        Ok(Command { args })
    }

    fn fields(&mut self) -> Vec<String> {
        let mut fields = Vec::new();
        while let Some(Token::Field(name)) = self.peek() {
            fields.push(name.clone());
            self.at += 1;
        }
        fields
    }

    fn operand(&mut self) -> Result<Operand, TemplateError> {
        let token = self.next().ok_or_else(|| self.error("unexpected end"))?;
        Ok(match token {
            Token::Dot => Operand::Dot,
            Token::Field(name) => {
                let mut fields = vec![name];
                fields.extend(self.fields());
                Operand::Field(fields)
            }
            Token::Variable(name) => {
                let fields = self.fields();
                Operand::Variable(name, fields)
            }
            Token::LeftParen => {
                let pipe = self.pipe("parenthesized pipeline", true)?;
                let fields = self.fields();
                Operand::Chain(Box::new(pipe), fields)
            }
            Token::String(text) => Operand::String(text),
            Token::Char(c) => Operand::Int(i64::from(u32::from(c))),
            Token::Number(text) => {
                number(&text).ok_or_else(|| self.error(format!("bad number syntax: {text:?}")))?
            }
            Token::Identifier(word) => match word.as_str() {
                "true" => Operand::Bool(true),
                "false" => Operand::Bool(false),
                "nil" => Operand::Nil,
                _ if self.functions.contains(&word.as_str()) => Operand::Function(word),
                _ => return Err(self.error(format!("function {word:?} not defined"))),
            },
            other => {
                return Err(self.error(format!("unexpected {} in operand", token_text(&other))));
            }
        })
    }
}

/// A number as Go writes constants: integers (decimal, `0x`, `0o`, `0b`, leading `0` octal, `_`
/// between digits) or floats.
fn number(text: &str) -> Option<Operand> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let clean = digits.replace('_', "");
    let lower = clean.to_ascii_lowercase();
    let integer = if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if let Some(octal) = lower.strip_prefix("0o") {
        i64::from_str_radix(octal, 8).ok()
    } else if let Some(binary) = lower.strip_prefix("0b") {
        i64::from_str_radix(binary, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.chars().all(|c| c.is_ascii_digit())
    {
        i64::from_str_radix(&lower[1..], 8).ok()
    } else {
        lower.parse::<i64>().ok()
    };
    if let Some(value) = integer {
        return Some(Operand::Int(if negative { -value } else { value }));
    }
    let float: f64 = lower.parse().ok()?;
    Some(Operand::Float(if negative { -float } else { float }))
}

fn token_text(token: &Token) -> String {
    match token {
        Token::Text(text) => text.clone(),
        Token::Open => "{{".into(),
        Token::Close => "}}".into(),
        Token::Field(name) => format!(".{name}"),
        Token::Variable(name) | Token::Identifier(name) | Token::Number(name) => name.clone(),
        Token::String(text) => format!("{text:?}"),
        Token::Char(c) => format!("{c:?}"),
        Token::Dot => ".".into(),
        Token::Pipe => " | ".into(),
        Token::LeftParen => "(".into(),
        Token::RightParen => ")".into(),
        Token::Declare => " := ".into(),
        Token::Assign => " = ".into(),
        Token::Comma => ", ".into(),
        Token::Space => " ".into(),
    }
}
