//! Executing a parsed template over JSON data with Go's `text/template` semantics: field chains
//! on maps (a missing key or one of a missing value is no value, kubectl's default
//! `--allow-missing-template-keys`), variables and their scopes, `if`/`with`/`range` (lists by
//! index, maps by sorted key, integers, `break`/`continue`, `else`), `template` and `block`, and the
//! builtins — Go's (`and or not len index slice print printf println eq ne lt le gt ge html js
//! urlquery call`), kubectl's (`exists base64decode`) and calicoctl's (`join joinAndTruncate`).

use std::borrow::Cow;

use serde_json::Value;

use super::TemplateError;
use super::parse::{Branch, Command, List, Node, Operand, Pipe, Tree};
use super::printf::{sprint, sprintf, sprintln};
use super::value::{Kind, Val};

/// Every function a template may call.
pub const FUNCTIONS: &[&str] = &[
    "and",
    "or",
    "not",
    "len",
    "index",
    "slice",
    "print",
    "printf",
    "println",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "html",
    "js",
    "urlquery",
    "call",
    "exists",
    "base64decode",
    "join",
    "joinAndTruncate",
];

/// How deep `template` calls may nest (Go's guard against a template that calls itself).
const MAX_DEPTH: usize = 1000;

enum Flow {
    Normal,
    Break,
    Continue,
}

/// One execution.
pub struct Exec<'t, 'a> {
    tree: &'t Tree,
    name: &'t str,
    pub out: String,
    variables: Vec<(String, Val<'a>)>,
    depth: usize,
}

impl<'t, 'a> Exec<'t, 'a> {
    pub fn new(tree: &'t Tree, name: &'t str, data: &'a Value) -> Exec<'t, 'a> {
        Exec {
            tree,
            name,
            out: String::new(),
            variables: vec![("$".to_string(), Val::of(Cow::Borrowed(data)))],
            depth: 0,
        }
    }

    pub fn run(&mut self, data: &'a Value) -> Result<(), TemplateError> {
        let dot = Val::of(Cow::Borrowed(data));
        let tree = self.tree;
        self.walk(&dot, &tree.main)?;
        Ok(())
    }

    fn error(&self, pipe: &Pipe, message: impl Into<String>) -> TemplateError {
        TemplateError::Exec {
            name: self.name.to_string(),
            line: pipe.line,
            at: pipe.text.clone(),
            message: message.into(),
        }
    }

    fn walk(&mut self, dot: &Val<'a>, list: &'t List) -> Result<Flow, TemplateError> {
        for node in list {
            match node {
                Node::Text(text) => self.out.push_str(text),
                Node::Action(pipe) => {
                    let value = self.pipe(dot, pipe, true)?;
                    if pipe.variables.is_empty() {
                        self.out.push_str(&value.print());
                    }
                }
                Node::If(branch) => {
                    let mark = self.variables.len();
                    let value = self.pipe(dot, &branch.pipe, true)?;
                    let flow = match value.truth() {
                        true => self.walk(dot, &branch.list)?,
                        false => self.walk_otherwise(dot, branch)?,
                    };
                    self.variables.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::With(branch) => {
                    let mark = self.variables.len();
                    let value = self.pipe(dot, &branch.pipe, true)?;
                    let flow = match value.truth() {
                        true => self.walk(&value, &branch.list)?,
                        false => self.walk_otherwise(dot, branch)?,
                    };
                    self.variables.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Range(branch) => self.range(dot, branch)?,
                Node::Template { name, pipe, line } => {
                    let Some(body) = self.tree.defined.get(name) else {
                        return Err(TemplateError::Exec {
                            name: self.name.to_string(),
                            line: *line,
                            at: format!("template {name:?}"),
                            message: format!("no such template {name:?}"),
                        });
                    };
                    let value = match pipe {
                        Some(pipe) => self.pipe(dot, pipe, false)?,
                        None => Val::Missing,
                    };
                    if self.depth >= MAX_DEPTH {
                        return Err(TemplateError::Exec {
                            name: self.name.to_string(),
                            line: *line,
                            at: format!("template {name:?}"),
                            message: format!("exceeded maximum template depth ({MAX_DEPTH})"),
                        });
                    }
                    // A template sees only `$`, set to its data.
                    let saved = std::mem::replace(
                        &mut self.variables,
                        vec![("$".to_string(), value.clone())],
                    );
                    self.depth += 1;
                    let result = self.walk(&value, body);
                    self.depth -= 1;
                    self.variables = saved;
                    result?;
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    fn walk_otherwise(&mut self, dot: &Val<'a>, branch: &'t Branch) -> Result<Flow, TemplateError> {
        match &branch.otherwise {
            Some(list) => self.walk(dot, list),
            None => Ok(Flow::Normal),
        }
    }

    /// A `range`; its `break` and `continue` end here.
    fn range(&mut self, dot: &Val<'a>, branch: &'t Branch) -> Result<(), TemplateError> {
        let mark = self.variables.len();
        let value = self.pipe(dot, &branch.pipe, false)?;
        let items: Vec<(Val<'a>, Val<'a>)> = match value.kind() {
            Kind::List => (0..value.as_list().map_or(0, Vec::len))
                .filter_map(|index| Some((Val::Int(index as i64), value.element(index)?)))
                .collect(),
            Kind::Map => {
                let mut keys: Vec<String> = value
                    .as_map()
                    .map(|map| map.keys().cloned().collect())
                    .unwrap_or_default();
                keys.sort();
                keys.into_iter()
                    .map(|key| {
                        let element = value.entry(&key);
                        (Val::Str(key), element)
                    })
                    .collect()
            }
            Kind::Int => {
                let Val::Int(count) = value else {
                    unreachable!("an int")
                };
                (0..count.max(0))
                    .map(|index| (Val::Int(index), Val::Int(index)))
                    .collect()
            }
            Kind::Invalid => Vec::new(),
            _ => {
                return Err(self.error(
                    &branch.pipe,
                    format!("range can't iterate over {}", value.to_go_string()),
                ));
            }
        };
        if items.is_empty() {
            let flow = self.walk_otherwise(dot, branch);
            self.variables.truncate(mark);
            flow?;
            return Ok(());
        }
        for (key, element) in items {
            match branch.pipe.variables.as_slice() {
                [] => {}
                [one] => self.variables.push((one.clone(), element.clone())),
                [first, second] => {
                    self.variables.push((first.clone(), key));
                    self.variables.push((second.clone(), element.clone()));
                }
                _ => unreachable!("the parser allows two"),
            }
            let flow = self.walk(&element, &branch.list)?;
            self.variables.truncate(mark);
            if let Flow::Break = flow {
                break;
            }
        }
        Ok(())
    }

    /// Evaluates a pipeline; declares or assigns its variables when `declare`.
    fn pipe(
        &mut self,
        dot: &Val<'a>,
        pipe: &'t Pipe,
        declare: bool,
    ) -> Result<Val<'a>, TemplateError> {
        let mut value: Option<Val<'a>> = None;
        for command in &pipe.commands {
            value = Some(self.command(dot, pipe, command, value)?);
        }
        let value = value.unwrap_or(Val::Missing);
        if declare && pipe.variables.len() == 1 {
            let name = &pipe.variables[0];
            if pipe.assign {
                match self
                    .variables
                    .iter_mut()
                    .rev()
                    .find(|(known, _)| known == name)
                {
                    Some(slot) => slot.1 = value.clone(),
                    None => return Err(self.error(pipe, format!("undefined variable: {name}"))),
                }
            } else {
                self.variables.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn variable(&self, pipe: &Pipe, name: &str) -> Result<Val<'a>, TemplateError> {
        self.variables
            .iter()
            .rev()
            .find(|(known, _)| known == name)
            .map(|(_, value)| value.clone())
            .ok_or_else(|| self.error(pipe, format!("undefined variable: {name}")))
    }

    fn fields(
        &self,
        pipe: &Pipe,
        mut value: Val<'a>,
        fields: &[String],
    ) -> Result<Val<'a>, TemplateError> {
        for field in fields {
            value = match value.kind() {
                Kind::Map => value.entry(field),
                Kind::Invalid => Val::Missing,
                _ => {
                    return Err(self.error(
                        pipe,
                        format!("can't evaluate field {field} in type {}", value.type_name()),
                    ));
                }
            };
        }
        Ok(value)
    }

    fn operand(
        &mut self,
        dot: &Val<'a>,
        pipe: &'t Pipe,
        operand: &'t Operand,
    ) -> Result<Val<'a>, TemplateError> {
        Ok(match operand {
            Operand::Dot => dot.clone(),
            Operand::Field(fields) => self.fields(pipe, dot.clone(), fields)?,
            Operand::Variable(name, fields) => {
                let value = self.variable(pipe, name)?;
                self.fields(pipe, value, fields)?
            }
            Operand::Chain(inner, fields) => {
                let value = self.pipe(dot, inner, true)?;
                self.fields(pipe, value, fields)?
            }
            Operand::String(text) => Val::Str(text.clone()),
            Operand::Int(int) => Val::Int(*int),
            Operand::Float(float) => Val::Float(*float),
            Operand::Bool(bool) => Val::Bool(*bool),
            Operand::Nil => return Err(self.error(pipe, "nil is not a command")),
            Operand::Function(name) => self.call(dot, pipe, name, &[], None)?,
        })
    }

    fn command(
        &mut self,
        dot: &Val<'a>,
        pipe: &'t Pipe,
        command: &'t Command,
        last: Option<Val<'a>>,
    ) -> Result<Val<'a>, TemplateError> {
        let first = &command.args[0];
        if let Operand::Function(name) = first {
            return self.call(dot, pipe, name, &command.args[1..], last);
        }
        if command.args.len() > 1 || last.is_some() {
            return Err(self.error(
                pipe,
                format!("can't give argument to non-function {}", describe(first)),
            ));
        }
        self.operand(dot, pipe, first)
    }

    fn call(
        &mut self,
        dot: &Val<'a>,
        pipe: &'t Pipe,
        name: &str,
        operands: &'t [Operand],
        last: Option<Val<'a>>,
    ) -> Result<Val<'a>, TemplateError> {
        // `and` and `or` evaluate their operands only as far as needed.
        if name == "and" || name == "or" {
            let count = operands.len() + usize::from(last.is_some());
            if count == 0 {
                return Err(self.error(
                    pipe,
                    format!("wrong number of args for {name}: want at least 1 got 0"),
                ));
            }
            let mut value = Val::Missing;
            for operand in operands {
                value = self.operand(dot, pipe, operand)?;
                if value.truth() == (name == "or") {
                    return Ok(value);
                }
            }
            if let Some(last) = last {
                value = last;
            }
            return Ok(value);
        }
        let mut args = Vec::with_capacity(operands.len() + 1);
        for operand in operands {
            args.push(self.operand(dot, pipe, operand)?);
        }
        args.extend(last);
        builtin(name, args)
            .map_err(|message| self.error(pipe, format!("error calling {name}: {message}")))
    }
}

fn describe(operand: &Operand) -> String {
    match operand {
        Operand::Dot => ".".into(),
        Operand::Field(fields) => format!(".{}", fields.join(".")),
        Operand::Variable(name, fields) if fields.is_empty() => name.clone(),
        Operand::Variable(name, fields) => format!("{name}.{}", fields.join(".")),
        Operand::String(text) => format!("{text:?}"),
        Operand::Int(int) => int.to_string(),
        Operand::Float(float) => float.to_string(),
        Operand::Bool(bool) => bool.to_string(),
        Operand::Nil => "nil".into(),
        Operand::Chain(..) => "(pipeline)".into(),
        Operand::Function(name) => name.clone(),
    }
}

fn want(args: &[Val], count: usize) -> Result<(), String> {
    match args.len() == count {
        true => Ok(()),
        false => Err(format!(
            "wrong number of args: want {count} got {}",
            args.len()
        )),
    }
}

/// The builtins other than `and` and `or`.
fn builtin<'a>(name: &str, args: Vec<Val<'a>>) -> Result<Val<'a>, String> {
    match name {
        "not" => {
            want(&args, 1)?;
            Ok(Val::Bool(!args[0].truth()))
        }
        "len" => {
            want(&args, 1)?;
            let arg = &args[0];
            Ok(Val::Int(match arg.kind() {
                Kind::String => arg.to_go_string().len() as i64,
                Kind::List => arg.as_list().map_or(0, Vec::len) as i64,
                Kind::Map => arg.as_map().map_or(0, |map| map.len()) as i64,
                _ => return Err(format!("len of type {}", arg.type_name())),
            }))
        }
        "index" => {
            let mut iter = args.into_iter();
            let mut value = iter
                .next()
                .ok_or("wrong number of args: want at least 1 got 0")?;
            for key in iter {
                value = match (value.kind(), &key) {
                    (Kind::List, Val::Int(index)) => {
                        let length = value.as_list().map_or(0, Vec::len);
                        if *index < 0 || *index as usize >= length {
                            return Err(format!(
                                "error calling index: index out of range: {index}"
                            ));
                        }
                        value.element(*index as usize).unwrap_or(Val::Missing)
                    }
                    (Kind::Map, Val::Str(key)) => value.entry(key),
                    (Kind::Invalid, _) => return Err("index of untyped nil".to_string()),
                    (Kind::List, other) | (Kind::Map, other) => {
                        return Err(format!(
                            "cannot index slice/map with type {}",
                            other.type_name()
                        ));
                    }
                    (_, _) => {
                        return Err(format!("can't index item of type {}", value.type_name()));
                    }
                };
            }
            Ok(value)
        }
        "slice" => {
            let mut iter = args.into_iter();
            let value = iter
                .next()
                .ok_or("wrong number of args: want at least 1 got 0")?;
            let bounds: Vec<i64> = iter
                .map(|bound| match bound {
                    Val::Int(int) => Ok(int),
                    other => Err(format!(
                        "cannot index slice/array with type {}",
                        other.type_name()
                    )),
                })
                .collect::<Result<_, _>>()?;
            if bounds.len() > 3 {
                return Err(format!("too many slice indexes: {}", bounds.len()));
            }
            let length = match value.kind() {
                Kind::String => value.to_go_string().len(),
                Kind::List => value.as_list().map_or(0, Vec::len),
                Kind::Invalid => return Err("slice of untyped nil".to_string()),
                _ => return Err(format!("can't slice item of type {}", value.type_name())),
            } as i64;
            let low = bounds.first().copied().unwrap_or(0);
            let high = bounds.get(1).copied().unwrap_or(length);
            if low < 0 || high < low || high > length {
                return Err(format!("invalid slice index: {low} > {high}"));
            }
            let (low, high) = (low as usize, high as usize);
            match value.kind() {
                Kind::String => {
                    let text = value.to_go_string();
                    let bytes = text.as_bytes().get(low..high).unwrap_or_default();
                    Ok(Val::Str(String::from_utf8_lossy(bytes).into_owned()))
                }
                _ => Ok(Val::Json(Cow::Owned(Value::Array(
                    value
                        .as_list()
                        .map(|items| items[low..high].to_vec())
                        .unwrap_or_default(),
                )))),
            }
        }
        "print" => Ok(Val::Str(sprint(&args))),
        "println" => Ok(Val::Str(sprintln(&args))),
        "printf" => {
            let (format, rest) = args
                .split_first()
                .ok_or("wrong number of args: want at least 1 got 0")?;
            if format.kind() != Kind::String {
                return Err(format!(
                    "wrong type for value; expected string; got {}",
                    format.type_name()
                ));
            }
            Ok(Val::Str(sprintf(&format.to_go_string(), rest)))
        }
        "eq" => {
            let (first, rest) = args
                .split_first()
                .ok_or("missing argument for comparison")?;
            if rest.is_empty() {
                return Err("missing argument for comparison".to_string());
            }
            for other in rest {
                if equal(first, other)? {
                    return Ok(Val::Bool(true));
                }
            }
            Ok(Val::Bool(false))
        }
        "ne" => {
            want(&args, 2)?;
            Ok(Val::Bool(!equal(&args[0], &args[1])?))
        }
        "lt" | "le" | "gt" | "ge" => {
            want(&args, 2)?;
            let ordering = order(&args[0], &args[1])?;
            Ok(Val::Bool(match name {
                "lt" => ordering.is_lt(),
                "le" => ordering.is_le(),
                "gt" => ordering.is_gt(),
                _ => ordering.is_ge(),
            }))
        }
        "html" => Ok(Val::Str(html_escape(&sprint(&args)))),
        "js" => Ok(Val::Str(js_escape(&sprint(&args)))),
        "urlquery" => Ok(Val::Str(query_escape(&sprint(&args)))),
        "call" => Err(format!(
            "non-function of type {}",
            args.first().map_or("<nil>", Val::type_name)
        )),
        "exists" => {
            // kubectl's: whether the chain of keys and indexes leads somewhere.
            let mut iter = args.into_iter();
            let mut value = iter
                .next()
                .ok_or("wrong number of args: want at least 1 got 0")?;
            for key in iter {
                value = match (value.kind(), &key) {
                    (Kind::Map, Val::Str(key))
                        if value.as_map().is_some_and(|map| map.contains_key(key)) =>
                    {
                        value.entry(key)
                    }
                    (Kind::List, Val::Int(index))
                        if *index >= 0
                            && (*index as usize) < value.as_list().map_or(0, Vec::len) =>
                    {
                        value.element(*index as usize).unwrap_or(Val::Missing)
                    }
                    _ => return Ok(Val::Bool(false)),
                };
            }
            Ok(Val::Bool(true))
        }
        "base64decode" => {
            want(&args, 1)?;
            let text = args[0].to_go_string();
            let decoded = decode_base64(&text)
                .ok_or_else(|| format!("base64 decode failed: illegal base64 data in `{text}`"))?;
            Ok(Val::Str(String::from_utf8_lossy(&decoded).into_owned()))
        }
        "join" | "joinAndTruncate" => {
            let (items, separator, limit) = match (name, args.as_slice()) {
                ("join", [items, separator]) => (items, separator, 0),
                ("joinAndTruncate", [items, separator, Val::Int(limit)]) => {
                    (items, separator, (*limit).max(0) as usize)
                }
                _ => return Err(format!("wrong number of args for {name}")),
            };
            Ok(Val::Str(join(items, &separator.to_go_string(), limit)))
        }
        other => Err(format!("function {other:?} not defined")),
    }
}

/// calicoctl's `join`/`joinAndTruncate`: a map as sorted `key=value`, a list's items, a value
/// alone; cut to `limit` bytes with `...` (0: no limit).
fn join(items: &Val, separator: &str, limit: usize) -> String {
    let parts: Vec<String> = match items.kind() {
        Kind::Invalid => return String::new(),
        Kind::Map => {
            let mut parts: Vec<String> = items
                .as_map()
                .map(|map| {
                    map.iter()
                        .map(|(key, value)| {
                            format!("{key}={}", Val::of(Cow::Borrowed(value)).to_go_string())
                        })
                        .collect()
                })
                .unwrap_or_default();
            parts.sort();
            parts
        }
        Kind::List => items
            .as_list()
            .map(|list| {
                list.iter()
                    .map(|value| Val::of(Cow::Borrowed(value)).to_go_string())
                    .collect()
            })
            .unwrap_or_default(),
        _ => vec![items.to_go_string()],
    };
    let mut text = String::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            text.push_str(separator);
        }
        text.push_str(part);
        if limit > 0 && text.len() > limit {
            let mut cut = limit.saturating_sub(3);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("...");
            break;
        }
    }
    text
}

/// Go's `eq` for two operands: basic kinds compare, int and float do not mix, no value equals
/// nothing (without an error).
fn equal(a: &Val, b: &Val) -> Result<bool, String> {
    let (ka, kb) = (a.kind(), b.kind());
    if ka != kb {
        if ka == Kind::Invalid || kb == Kind::Invalid {
            return Ok(false);
        }
        return Err("incompatible types for comparison".to_string());
    }
    Ok(match (a, b) {
        _ if ka == Kind::Invalid => true,
        _ if matches!(ka, Kind::List | Kind::Map) => {
            return Err(format!(
                "non-comparable type {}: {}",
                a.to_go_string(),
                a.type_name()
            ));
        }
        _ => match ka {
            Kind::Int => as_int(a) == as_int(b),
            Kind::Float => as_float(a) == as_float(b),
            _ => a.to_go_string() == b.to_go_string(),
        },
    })
}

fn order(a: &Val, b: &Val) -> Result<std::cmp::Ordering, String> {
    let (ka, kb) = (a.kind(), b.kind());
    if ka != kb {
        return Err("incompatible types for comparison".to_string());
    }
    match ka {
        Kind::Int => Ok(as_int(a).cmp(&as_int(b))),
        Kind::Float => as_float(a)
            .partial_cmp(&as_float(b))
            .ok_or_else(|| "incompatible types for comparison".to_string()),
        Kind::String => Ok(a.to_go_string().cmp(&b.to_go_string())),
        _ => Err(format!("invalid type for comparison: {}", a.type_name())),
    }
}

fn as_int(value: &Val) -> i64 {
    match value {
        Val::Int(int) => *int,
        _ => 0,
    }
}

fn as_float(value: &Val) -> f64 {
    match value {
        Val::Float(float) => *float,
        _ => 0.0,
    }
}

/// Go's `html`/`HTMLEscapeString`: the five markup characters as entities, NUL as U+FFFD.
fn html_escape(text: &str) -> String {
    const HTML: &[(char, &str)] = &[
        ('<', "&lt;"),
        ('>', "&gt;"),
        ('&', "&amp;"),
        ('\'', "&#39;"),
        ('"', "&#34;"),
        ('\0', "\u{fffd}"),
    ];
    escape_with(text, HTML, |_| None)
}

/// Go's `js`/`JSEscapeString`: quotes and backslash escaped, markup characters and `=` as
/// `\uXXXX`, other control characters as `\uXXXX` too.
fn js_escape(text: &str) -> String {
    const JS: &[(char, &str)] = &[
        ('\\', "\\\\"),
        ('\'', "\\'"),
        ('"', "\\\""),
        ('<', "\\u003C"),
        ('>', "\\u003E"),
        ('&', "\\u0026"),
        ('=', "\\u003D"),
        ('\n', "\\n"),
        ('\r', "\\r"),
        ('\t', "\\t"),
    ];
    escape_with(text, JS, |c| {
        ((c as u32) < 0x20).then(|| format!("\\u{:04X}", c as u32))
    })
}

/// `text` with each character of `table` replaced by its escape, and any other character
/// `otherwise` escapes replaced by that.
fn escape_with(
    text: &str,
    table: &[(char, &str)],
    otherwise: impl Fn(char) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match table.iter().find(|(from, _)| *from == c) {
            Some((_, escaped)) => out.push_str(escaped),
            None => match otherwise(c) {
                Some(escaped) => out.push_str(&escaped),
                None => out.push(c),
            },
        }
    }
    out
}

fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Standard base64 (padding required, as Go's `base64.StdEncoding`).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}
