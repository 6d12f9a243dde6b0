//! The resources part of a migration file cut into one YAML text per resource, so that it is
//! never read as one tree: the part is a `<Kind>List` document per kind, and a datastore's worth of
//! host endpoints read as one List peaked at 733 MB for a 27 MB file of 100,000 of them, 299 MB
//! cut (docs/benchmarks.md, "Reading a migration export").
//!
//! Upstream's export (`calicoctl/calicoctl/commands/datastore/migrate/export.go`, through its YAML
//! printer) and netctl's write each List with `items:` at column 0 and every item starting with
//! `- ` at one indentation, each item carrying its own `apiVersion` and `kind`. An item is the text
//! from its `- ` line to the next one (or the List's next field), taken out of the sequence (its
//! indentation removed); the List itself is read without its items, so its `apiVersion`, `kind`
//! and fields are checked as before. A document written otherwise — a List in flow style, an
//! item without its own `kind` or of another kind than its `<Kind>List`, a List of a kind netctl
//! does not know, a line that breaks the layout — is handed on whole, to be read (and refused) as
//! before.

use std::borrow::Cow;

use crate::resource::Kind;

/// One resource's text (or a whole document that is not cut), and where it is in the file.
#[derive(Debug, PartialEq)]
pub struct Piece<'text> {
    pub text: Cow<'text, str>,
    /// The 1-based line of the file it starts on.
    pub line: usize,
    /// The 1-based index of its document in the part.
    pub document: usize,
    /// The 1-based index of the item in its List, when it was cut out of one.
    pub item: Option<usize>,
}

/// The pieces of `part` (the file's first part, which starts on line 1), in order.
pub fn pieces(part: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    for (index, (document, line)) in documents(part).into_iter().enumerate() {
        match list_items(document, line, index + 1) {
            Some(items) => pieces.extend(items),
            None => pieces.push(Piece {
                text: Cow::Borrowed(document),
                line,
                document: index + 1,
                item: None,
            }),
        }
    }
    pieces
}

/// The YAML documents of `part` (separated by `---` lines) with the line each starts on; the
/// separators themselves are left out, and so are documents of blank lines only.
fn documents(part: &str) -> Vec<(&str, usize)> {
    let mut documents = Vec::new();
    let (mut start, mut start_line, mut offset) = (0, 1, 0);
    for (index, line) in part.split_inclusive('\n').enumerate() {
        let content = line.trim_end();
        if content == "---" || content.starts_with("--- ") {
            documents.push((&part[start..offset], start_line));
            start = offset + line.len();
            start_line = index + 2;
        }
        offset += line.len();
    }
    documents.push((&part[start..], start_line));
    documents.retain(|(text, _)| !text.trim().is_empty());
    documents
}

/// The items of a List `document` starting on `first_line`, or `None` when it is not a List laid
/// out as an export lays it out (it is then read whole).
fn list_items(document: &str, first_line: usize, number: usize) -> Option<Vec<Piece<'_>>> {
    let lines: Vec<&str> = document.split_inclusive('\n').collect();
    let items_at = lines.iter().position(|line| line.trim_end() == "items:")?;
    let first = lines[items_at + 1..]
        .iter()
        .position(|line| !line.trim().is_empty())
        .map(|found| found + items_at + 1)?;
    let indent = lines[first].len() - lines[first].trim_start_matches(' ').len();
    if !lines[first][indent..].starts_with("- ") {
        return None;
    }
    let body = indent + 2;
    let mut items = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in lines.iter().enumerate().skip(first) {
        let spaces = line.len() - line.trim_start_matches(' ').len();
        if line.trim().is_empty() {
            if let Some((_, text)) = &mut current {
                text.push('\n');
            }
            continue;
        }
        if spaces == indent && line[indent..].starts_with("- ") {
            items.extend(current.take());
            let mut text = String::with_capacity(line.len());
            text.push_str(&line[body..]);
            current = Some((index, text));
            continue;
        }
        if spaces >= body {
            let (_, text) = current.as_mut()?;
            text.push_str(&line[body..]);
            continue;
        }
        // The List's next field (`kind: HostEndpointList`): the items end here. Anything else
        // (a comment at the items' level, a sequence nested unusually) is not the export's layout.
        if spaces == 0 && !line.starts_with('#') && !line.starts_with('-') {
            break;
        }
        return None;
    }
    items.extend(current.take());
    let end = items_end(&lines, first, indent);
    // The List without its items, read as the List would be (its apiVersion, kind and fields
    // checked), and the kind its items must have: a `<Kind>List`'s own, any under a `List`.
    let mut envelope = String::new();
    for (index, line) in lines.iter().enumerate() {
        match index {
            index if index == items_at => envelope.push_str("items: []\n"),
            index if index > items_at && index < end => {}
            _ => envelope.push_str(line),
        }
    }
    let item_kind = match top_level(&envelope, "kind")? {
        "List" => None,
        kind => Some(
            kind.strip_suffix("List")
                .filter(|kind| Kind::from_document_kind(kind).is_some())?
                .to_string(),
        ),
    };
    let mut pieces = vec![Piece {
        text: Cow::Owned(envelope),
        line: first_line,
        document: number,
        item: None,
    }];
    for (item, (index, text)) in items.into_iter().enumerate() {
        // Each item names its own kind, as exports write them, the List's when it is typed; one
        // that does not is read with its List, which says what is wrong.
        let kind = top_level(&text, "kind")?;
        if item_kind.as_ref().is_some_and(|expected| expected != kind) {
            return None;
        }
        pieces.push(Piece {
            text: Cow::Owned(text),
            line: first_line + index,
            document: number,
            item: Some(item + 1),
        });
    }
    Some(pieces)
}

/// The index of the first line after the items (the List's next field, or the end).
fn items_end(lines: &[&str], first: usize, indent: usize) -> usize {
    lines
        .iter()
        .enumerate()
        .skip(first)
        .find(|(_, line)| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            !line.trim().is_empty()
                && spaces <= indent
                && !line[indent.min(spaces)..].starts_with("- ")
        })
        .map_or(lines.len(), |(index, _)| index)
}

/// The plain value of the top-level field `name` of a block mapping's text (`kind: HostEndpoint`).
fn top_level<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(':')?.trim();
        (!value.is_empty()).then(|| value.trim_matches(['"', '\'']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPORT: &str = "apiVersion: projectcalico.org/v3\nitems:\n- apiVersion: projectcalico.org/v3\n  kind: HostEndpoint\n  metadata:\n    name: a\n  spec:\n    expectedIPs:\n    - 10.0.0.1\n\n    node: n1\n- apiVersion: projectcalico.org/v3\n  kind: HostEndpoint\n  metadata:\n    name: b\nkind: HostEndpointList\nmetadata:\n  resourceVersion: \"9\"\n---\napiVersion: projectcalico.org/v3\nitems: []\nkind: IPPoolList\n---\napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata:\n  name: t\n";

    #[test]
    fn each_item_of_a_list_is_its_own_text_on_its_own_line() {
        let pieces = pieces(EXPORT);
        assert_eq!(pieces.len(), 5, "{pieces:?}");
        // The List itself, without its items.
        assert_eq!(
            pieces[0].text,
            "apiVersion: projectcalico.org/v3\nitems: []\nkind: HostEndpointList\nmetadata:\n  resourceVersion: \"9\"\n"
        );
        assert_eq!((pieces[0].line, pieces[0].item), (1, None));
        let pieces = &pieces[1..];
        assert_eq!(
            pieces[0],
            Piece {
                text: Cow::Owned("apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: a\nspec:\n  expectedIPs:\n  - 10.0.0.1\n\n  node: n1\n".to_string()),
                line: 3,
                document: 1,
                item: Some(1),
            }
        );
        assert_eq!((pieces[1].line, pieces[1].item), (12, Some(2)));
        assert!(pieces[1].text.ends_with("metadata:\n  name: b\n"));
        // A List in flow style, and a document that is no List, are read whole.
        assert_eq!(
            (pieces[2].line, pieces[2].document, pieces[2].item),
            (20, 2, None)
        );
        assert!(pieces[2].text.contains("items: []"));
        assert_eq!(pieces[3].line, 24);
        assert!(
            pieces[3]
                .text
                .starts_with("apiVersion: projectcalico.org/v3\nkind: Tier")
        );
    }

    #[test]
    fn a_list_laid_out_otherwise_is_read_whole() {
        for document in [
            // An item without its own kind, one of another kind than its List's, a List of a
            // kind netctl does not know.
            "items:\n- metadata:\n    name: a\nkind: HostEndpointList\n",
            "items:\n- kind: IPPool\nkind: HostEndpointList\n",
            "items:\n- kind: IPPool\nkind: FrobnicatorList\n",
            // A comment among the items is not the layout.
            "items:\n  - kind: HostEndpoint\n# a comment\n  - kind: HostEndpoint\nkind: List\n",
        ] {
            let pieces = pieces(document);
            assert_eq!(pieces.len(), 1, "{document}: {pieces:?}");
            assert_eq!(pieces[0].text, document);
        }
        // Items indented under `items:` are cut too, and a generic `List` holds any kinds.
        let indented = pieces(
            "kind: List\nitems:\n  - kind: HostEndpoint\n    metadata: {name: a}\n  - kind: IPPool\n",
        );
        assert_eq!(indented.len(), 3, "{indented:?}");
        assert_eq!(indented[0].text, "kind: List\nitems: []\n");
        assert_eq!(
            indented[1].text,
            "kind: HostEndpoint\nmetadata: {name: a}\n"
        );
    }
}
