//! The forms of `netctl get` that kubectl users type by habit: `hep/name` and `hep,gnp` targets,
//! `--no-headers`, `--show-labels`, `-o jsonpath=TEMPLATE` and `-o go-template=TEMPLATE` /
//! `-o go-template-file=FILE` (also with `--template`), as kubectl and calicoctl take them.
//!
//! It owns only what kubectl adds on top of the printers in `crate::output`: it parses the target
//! forms into kinds and keys, filters heading lines out of the tables those printers write, prints
//! the one extra LABELS column, and evaluates a JSONPath or Go template over the JSON document
//! `-o json` would print (`crate::output::go_template` runs Go's). It reads no datastore (a
//! template file aside) and does not change how a table or document is laid out.

use std::io::{self, Write};

use serde_json::Value;
use serde_json_path::JsonPath;

use crate::errors::Hint;
use crate::output::go_template::{GoTemplate, TemplateError};
use crate::output::{
    ColumnSet, OutputError, OutputFormat, PrintOptions, ResourcePrinter, Shape, TableColumns,
    TableWriter,
};
use crate::resource::{Kind, Resource};

/// What the positional arguments of `get` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// `KIND[,KIND...] [NAME...]`: every resource of each kind, or the NAMEs of each.
    Kinds {
        kinds: Vec<Kind>,
        names: Vec<String>,
    },
    /// `KIND/NAME ...`: exactly these resources.
    Named(Vec<(Kind, String)>),
}

/// A `get` target that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("`{0}` is not of the form KIND/NAME")]
    NotKindSlashName(String),
    #[error("cannot mix KIND/NAME arguments with a separate NAME `{0}`")]
    MixedForms(String),
}

impl Hint for TargetError {
    fn hint(&self) -> Option<String> {
        Some("write every argument as KIND/NAME (`get hep/a gnp/b`), or give one KIND and then NAMEs (`get hep a b`)".into())
    }
}

/// Reads `KIND`, `KIND,KIND`, or `KIND/NAME` arguments (as kubectl does).
pub fn parse_targets(first: &str, names: &[String]) -> anyhow::Result<Targets> {
    if first.contains('/') {
        let mut named = Vec::new();
        for argument in std::iter::once(first).chain(names.iter().map(String::as_str)) {
            let Some((kind, name)) = argument.split_once('/') else {
                return Err(TargetError::MixedForms(argument.to_string()).into());
            };
            if name.is_empty() || name.contains('/') {
                return Err(TargetError::NotKindSlashName(argument.to_string()).into());
            }
            named.push((kind.parse::<Kind>()?, name.to_string()));
        }
        return Ok(Targets::Named(named));
    }
    let kinds = first
        .split(',')
        .filter(|kind| !kind.is_empty())
        .map(str::parse::<Kind>)
        .collect::<Result<Vec<Kind>, _>>()?;
    let mut unique = Vec::new();
    for kind in kinds {
        if !unique.contains(&kind) {
            unique.push(kind);
        }
    }
    Ok(Targets::Kinds {
        kinds: unique,
        names: names.to_vec(),
    })
}

/// How the results are presented beyond the printer's own formats.
#[derive(Debug, Clone, Default)]
pub struct Presentation {
    /// `--no-headers`: table rows only.
    pub no_headers: bool,
    /// `--show-labels`: a LABELS column after the format's own.
    pub show_labels: bool,
    /// `-o jsonpath=TEMPLATE`, `-o go-template=TEMPLATE`, `-o go-template-file=FILE`.
    pub template: Option<Template>,
}

/// A template `get` renders over each JSON document its printer writes.
#[derive(Debug, Clone)]
pub enum Template {
    JsonPath(JsonPathTemplate),
    Go(GoTemplate),
}

impl Template {
    /// The text for one document.
    pub fn render(&self, document: &Value) -> Result<String, TemplateError> {
        match self {
            Template::JsonPath(template) => Ok(template.render(document)),
            Template::Go(template) => template.render(document),
        }
    }
}

/// A Go template that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GoTemplateError {
    #[error("`-o {format}` needs a template: `-o {format}=...` or `--template ...`")]
    Missing { format: &'static str },
    #[error("cannot read the template file `{path}`")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`--template` is only used with `-o go-template` or `-o go-template-file`")]
    TemplateWithoutFormat,
    #[error("the go-template does not parse")]
    Parse(#[source] TemplateError),
}

impl Hint for GoTemplateError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            GoTemplateError::Parse(_) | GoTemplateError::Missing { .. } => {
                "Go template syntax over the JSON document `-o json` prints, e.g. -o go-template='{{range .items}}{{.metadata.name}}{{\"\\n\"}}{{end}}'"
            }
            GoTemplateError::File { .. } => "give a readable file: -o go-template-file=PATH",
            GoTemplateError::TemplateWithoutFormat => {
                "add `-o go-template` (the template text) or `-o go-template-file` (a file)"
            }
        }
        .to_string())
    }
}

impl Presentation {
    /// Reads `-o` (a printer format, `jsonpath=...`, `go-template=...`, `go-template-file=...`),
    /// `--template` and the two table flags.
    pub fn parse(
        output: &str,
        template: Option<&str>,
        no_headers: bool,
        show_labels: bool,
    ) -> anyhow::Result<(OutputFormat, Presentation)> {
        let go = |text: &str| -> Result<Template, GoTemplateError> {
            GoTemplate::parse(text)
                .map(Template::Go)
                .map_err(GoTemplateError::Parse)
        };
        let go_file = |path: &str| -> Result<Template, GoTemplateError> {
            let text = std::fs::read_to_string(path).map_err(|source| GoTemplateError::File {
                path: path.to_string(),
                source,
            })?;
            go(&text)
        };
        let chosen = match (output.split_once('='), output, template) {
            (Some(("jsonpath", text)), _, _) => {
                Some(Template::JsonPath(JsonPathTemplate::parse(text)?))
            }
            (None, "jsonpath", _) => return Err(JsonPathError::Empty.into()),
            (Some(("go-template", "")), _, None) | (None, "go-template", None) => {
                return Err(GoTemplateError::Missing {
                    format: "go-template",
                }
                .into());
            }
            (Some(("go-template-file", "")), _, None) | (None, "go-template-file", None) => {
                return Err(GoTemplateError::Missing {
                    format: "go-template-file",
                }
                .into());
            }
            (Some(("go-template", text)), _, _) if !text.is_empty() => Some(go(text)?),
            (Some(("go-template-file", path)), _, _) if !path.is_empty() => Some(go_file(path)?),
            (_, "go-template" | "go-template=", Some(text)) => Some(go(text)?),
            (_, "go-template-file" | "go-template-file=", Some(path)) => Some(go_file(path)?),
            (_, _, Some(_)) => return Err(GoTemplateError::TemplateWithoutFormat.into()),
            _ => None,
        };
        let format = match chosen {
            Some(_) => OutputFormat::Json,
            None => output.parse()?,
        };
        Ok((
            format,
            Presentation {
                no_headers,
                show_labels,
                template: chosen,
            },
        ))
    }
}

/// The writer tables go to: stdout, less every table's heading line and the blank line that ends
/// it when `--no-headers` is given.
pub fn table_output<'a, W: Write + 'a>(out: W, presentation: &Presentation) -> Box<dyn Write + 'a> {
    if presentation.no_headers {
        Box::new(HeadingFilter {
            out,
            line: Vec::new(),
            at_table_start: true,
        })
    } else {
        Box::new(out)
    }
}

/// Drops the first line of every table and the empty line after it. Rows are never empty (every
/// row has a NAME), so an empty line is always a table's end.
struct HeadingFilter<W: Write> {
    out: W,
    line: Vec<u8>,
    at_table_start: bool,
}

impl<W: Write> Write for HeadingFilter<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        for &byte in buffer {
            self.line.push(byte);
            if byte == b'\n' {
                let empty = self.line.len() == 1;
                if empty {
                    self.at_table_start = true;
                } else if self.at_table_start {
                    self.at_table_start = false;
                } else {
                    self.out.write_all(&self.line)?;
                }
                self.line.clear();
            }
        }
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A resource printer, or a table with a LABELS column for `--show-labels`.
pub enum GetPrinter<W: Write> {
    Standard(ResourcePrinter<W>),
    Labelled(LabelledTable<W>),
}

impl<W: Write> GetPrinter<W> {
    pub fn new(
        out: W,
        kind: Kind,
        shape: Shape,
        options: &PrintOptions,
        presentation: &Presentation,
    ) -> Result<GetPrinter<W>, OutputError> {
        let set = match &options.format {
            OutputFormat::Ps => Some(ColumnSet::Ps),
            OutputFormat::Wide => Some(ColumnSet::Wide),
            OutputFormat::CustomColumns(headings) => Some(ColumnSet::Custom(headings)),
            _ => None,
        };
        match set {
            Some(set) if presentation.show_labels => {
                let columns = TableColumns::new(kind, set, options.namespace_column)?;
                let mut headings: Vec<String> =
                    columns.headings().into_iter().map(String::from).collect();
                headings.push("LABELS".to_string());
                Ok(GetPrinter::Labelled(LabelledTable {
                    kind,
                    one_table: matches!(shape, Shape::List { .. }),
                    out: Some(out),
                    table: None,
                    headings,
                    columns,
                    options: options.clone(),
                }))
            }
            _ => Ok(GetPrinter::Standard(ResourcePrinter::new(
                out, kind, shape, options,
            )?)),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            GetPrinter::Standard(printer) => printer.kind(),
            GetPrinter::Labelled(table) => table.kind,
        }
    }

    pub fn print(&mut self, resource: &Resource) -> Result<(), OutputError> {
        match self {
            GetPrinter::Standard(printer) => printer.print(resource),
            GetPrinter::Labelled(table) => table.print(resource),
        }
    }

    /// [`print`](Self::print) for a listed resource whose spec and status come parsed from their
    /// stored JSON text ([`crate::datastore::Detail::Document`]).
    pub fn print_stored(
        &mut self,
        resource: &Resource,
        body: &crate::datastore::StoredBody,
    ) -> Result<(), OutputError> {
        let (spec, status) = (body.spec.as_ref(), body.status.as_ref());
        match self {
            GetPrinter::Standard(printer) => printer.print_parsed(resource, spec, status),
            GetPrinter::Labelled(table) => {
                table.print(&crate::output::decoded_stored(resource, spec, status))
            }
        }
    }

    pub fn finish(self) -> Result<W, OutputError> {
        match self {
            GetPrinter::Standard(printer) => printer.finish(),
            GetPrinter::Labelled(table) => table.finish(),
        }
    }
}

/// The format's table plus LABELS (`key=value,...` sorted, `<none>` without labels, as kubectl):
/// one table for a list, one per object for a get by name, as the plain printer does.
pub struct LabelledTable<W: Write> {
    kind: Kind,
    one_table: bool,
    /// The writer while no table is open.
    out: Option<W>,
    table: Option<TableWriter<W>>,
    headings: Vec<String>,
    columns: TableColumns,
    options: PrintOptions,
}

impl<W: Write> LabelledTable<W> {
    fn print(&mut self, resource: &Resource) -> Result<(), OutputError> {
        let mut row = self.columns.row(resource, &self.options.cells);
        row.push(labels_cell(resource));
        if !self.one_table
            && let Some(table) = self.table.take()
        {
            self.out = Some(table.finish()?);
        }
        let table = match (self.table.take(), self.out.take()) {
            (Some(table), _) => table,
            (None, Some(out)) => {
                TableWriter::with_chunk_rows(out, self.headings.clone(), self.options.chunk_rows)
            }
            (None, None) => unreachable!("the writer is either open as a table or kept"),
        };
        self.table = Some(table);
        if let Some(table) = &mut self.table {
            table.push_row(row)?;
        }
        Ok(())
    }

    /// Closes the open table. A list with no rows still prints its heading (as the plain printer);
    /// a get by name that found nothing prints nothing.
    fn finish(mut self) -> Result<W, OutputError> {
        if self.one_table && self.table.is_none() {
            if let Some(out) = self.out.take() {
                self.table = Some(TableWriter::with_chunk_rows(
                    out,
                    self.headings.clone(),
                    self.options.chunk_rows,
                ));
            }
        }
        match (self.table.take(), self.out.take()) {
            (Some(table), _) => Ok(table.finish()?),
            (None, Some(mut out)) => {
                out.flush()?;
                Ok(out)
            }
            (None, None) => unreachable!("the writer is either open as a table or kept"),
        }
    }
}

fn labels_cell(resource: &Resource) -> String {
    let labels = &resource.metadata.labels;
    if labels.is_empty() {
        return "<none>".to_string();
    }
    let pairs: Vec<String> = labels
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    pairs.join(",")
}

/// A `-o jsonpath=` template that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum JsonPathError {
    #[error("`-o jsonpath` needs a template")]
    Empty,
    #[error("unclosed `{{` in the jsonpath template `{template}`")]
    Unclosed { template: String },
    #[error("`{{end}}` without `{{range ...}}` in the jsonpath template `{template}`")]
    EndWithoutRange { template: String },
    #[error("`{{range ...}}` without `{{end}}` in the jsonpath template `{template}`")]
    RangeWithoutEnd { template: String },
    #[error("invalid JSONPath expression `{expression}`")]
    Expression {
        expression: String,
        #[source]
        source: serde_json_path::ParseError,
    },
}

impl Hint for JsonPathError {
    fn hint(&self) -> Option<String> {
        Some("as kubectl: -o jsonpath='{.items[*].metadata.name}' or -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}'".into())
    }
}

/// kubectl's JSONPath template: text, `{expression}`, `{"literal"}` and `{range expression}...{end}`.
#[derive(Debug, Clone)]
pub struct JsonPathTemplate {
    parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone)]
enum TemplatePart {
    Text(String),
    Expression(JsonPath),
    Range(JsonPath, Vec<TemplatePart>),
}

impl JsonPathTemplate {
    pub fn parse(template: &str) -> Result<JsonPathTemplate, JsonPathError> {
        if template.is_empty() {
            return Err(JsonPathError::Empty);
        }
        let mut stack: Vec<(Option<JsonPath>, Vec<TemplatePart>)> = vec![(None, Vec::new())];
        let mut rest = template;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                push(&mut stack, TemplatePart::Text(rest.to_string()));
                break;
            };
            if open > 0 {
                push(&mut stack, TemplatePart::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 1..];
            let close = closing_brace(after).ok_or_else(|| JsonPathError::Unclosed {
                template: template.to_string(),
            })?;
            let inner = after[..close].trim();
            rest = &after[close + 1..];
            if inner == "end" {
                let (Some(path), parts) = stack.pop().expect("the template level is never popped")
                else {
                    return Err(JsonPathError::EndWithoutRange {
                        template: template.to_string(),
                    });
                };
                push(&mut stack, TemplatePart::Range(path, parts));
            } else if let Some(expression) = inner.strip_prefix("range ") {
                stack.push((Some(compile(expression.trim())?), Vec::new()));
            } else if let Some(literal) = string_literal(inner) {
                push(&mut stack, TemplatePart::Text(literal));
            } else {
                push(&mut stack, TemplatePart::Expression(compile(inner)?));
            }
        }
        if stack.len() != 1 {
            return Err(JsonPathError::RangeWithoutEnd {
                template: template.to_string(),
            });
        }
        let (_, parts) = stack.pop().expect("one level is left");
        Ok(JsonPathTemplate { parts })
    }

    /// The template applied to `document`.
    pub fn render(&self, document: &Value) -> String {
        let mut text = String::new();
        render_parts(&self.parts, document, &mut text);
        text
    }
}

fn push(stack: &mut [(Option<JsonPath>, Vec<TemplatePart>)], part: TemplatePart) {
    if let Some((_, parts)) = stack.last_mut() {
        parts.push(part);
    }
}

/// Where the `}` closing an opened `{` is, skipping braces inside quoted literals.
fn closing_brace(text: &str) -> Option<usize> {
    let mut quote = None;
    let mut escaped = false;
    for (index, character) in text.char_indices() {
        match (quote, character) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(open), close) if close == open && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(character),
            (None, '}') => return Some(index),
            _ => {}
        }
        escaped = false;
    }
    None
}

/// `"text"` with `\n`, `\t`, `\\` and `\"` escapes, as kubectl's templates write line breaks.
fn string_literal(inner: &str) -> Option<String> {
    let body = inner.strip_prefix('"')?.strip_suffix('"')?;
    let mut text = String::new();
    let mut characters = body.chars();
    while let Some(character) = characters.next() {
        if character != '\\' {
            text.push(character);
            continue;
        }
        match characters.next() {
            Some('n') => text.push('\n'),
            Some('t') => text.push('\t'),
            Some('r') => text.push('\r'),
            Some(other) => text.push(other),
            None => text.push('\\'),
        }
    }
    Some(text)
}

/// kubectl writes `.items[*].metadata.name` (the root implied) or `$.items...`; RFC 9535 wants `$`.
fn compile(expression: &str) -> Result<JsonPath, JsonPathError> {
    let full = if expression.starts_with('$') {
        expression.to_string()
    } else if expression.starts_with('.') || expression.starts_with('[') {
        format!("${expression}")
    } else {
        format!("$.{expression}")
    };
    JsonPath::parse(&full).map_err(|source| JsonPathError::Expression {
        expression: expression.to_string(),
        source,
    })
}

fn render_parts(parts: &[TemplatePart], document: &Value, text: &mut String) {
    for part in parts {
        match part {
            TemplatePart::Text(literal) => text.push_str(literal),
            TemplatePart::Expression(path) => {
                let values: Vec<String> =
                    path.query(document).all().into_iter().map(scalar).collect();
                text.push_str(&values.join(" "));
            }
            TemplatePart::Range(path, body) => {
                for item in path.query(document).all() {
                    render_parts(body, item, text);
                }
            }
        }
    }
}

/// Strings as they are, anything else as compact JSON (as kubectl prints them).
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str, document: &Value) -> String {
        JsonPathTemplate::parse(template).unwrap().render(document)
    }

    #[test]
    fn kubectl_templates_render() {
        let list = serde_json::json!({
            "kind": "HostEndpointList",
            "items": [
                {"metadata": {"name": "a", "labels": {"zone": "x"}}, "spec": {"expectedIPs": ["10.0.0.1"]}},
                {"metadata": {"name": "b"}, "spec": {}}
            ]
        });
        assert_eq!(render("{.items[*].metadata.name}", &list), "a b");
        assert_eq!(
            render("{range .items[*]}{.metadata.name}{\"\\n\"}{end}", &list),
            "a\nb\n"
        );
        assert_eq!(render("kind={.kind}", &list), "kind=HostEndpointList");
        assert_eq!(
            render("{$.items[0].spec.expectedIPs}", &list),
            "[\"10.0.0.1\"]"
        );
        assert_eq!(
            render("{.items[?(@.metadata.name=='b')].metadata.name}", &list),
            "b"
        );
    }

    #[test]
    fn broken_templates_are_refused() {
        assert!(matches!(
            JsonPathTemplate::parse("{.items"),
            Err(JsonPathError::Unclosed { .. })
        ));
        assert!(matches!(
            JsonPathTemplate::parse("{end}"),
            Err(JsonPathError::EndWithoutRange { .. })
        ));
        assert!(matches!(
            JsonPathTemplate::parse("{range .items[*]}{.a}"),
            Err(JsonPathError::RangeWithoutEnd { .. })
        ));
        assert!(matches!(
            JsonPathTemplate::parse("{.items[}"),
            Err(JsonPathError::Expression { .. })
        ));
    }

    #[test]
    fn targets_follow_kubectl() {
        assert_eq!(
            parse_targets("hep/a", &["gnp/b".into()]).unwrap(),
            Targets::Named(vec![
                (Kind::HostEndpoint, "a".into()),
                (Kind::GlobalNetworkPolicy, "b".into())
            ])
        );
        assert_eq!(
            parse_targets("hep,gnp,heps", &[]).unwrap(),
            Targets::Kinds {
                kinds: vec![Kind::HostEndpoint, Kind::GlobalNetworkPolicy],
                names: vec![]
            }
        );
        assert!(parse_targets("hep/a", &["b".into()]).is_err());
        assert!(parse_targets("hep/", &[]).is_err());
    }

    #[test]
    fn no_headers_drops_every_heading_and_table_end() {
        let mut filtered = Vec::new();
        {
            let presentation = Presentation {
                no_headers: true,
                ..Presentation::default()
            };
            let mut out = table_output(&mut filtered, &presentation);
            out.write_all(b"NAME   NODE\na      n1\n\nNAME   NODE\nb      n2\n\n")
                .unwrap();
        }
        assert_eq!(
            String::from_utf8(filtered).unwrap(),
            "a      n1\nb      n2\n"
        );
    }
}
