//! The selector a kubectl user meant: `zone=a,role!=db,gpu,!spot` rewritten in netctl's selector
//! language (`zone == "a" && role != "db" && has(gpu) && !has(spot)`), for the hint of a selector that
//! did not parse.
//!
//! It only rewrites the equality-based kubectl form; set-based kubectl selectors (`zone in (a,b)`) and
//! anything it cannot read give no suggestion. It never decides what a selector means: the suggestion
//! is parsed by the real parser before it is offered.

use super::Selector;

/// The netctl selector for `text` read as a kubectl equality selector, when it is one and the
/// rewrite parses; `None` otherwise.
pub fn kubectl_equivalent(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split(',')
        .map(|term| rewrite_term(term.trim()))
        .collect::<Option<_>>()?;
    let rewritten = terms.join(" && ");
    Selector::parse(&rewritten).ok()?;
    Some(rewritten)
}

fn rewrite_term(term: &str) -> Option<String> {
    if let Some((key, value)) = term.split_once("!=") {
        return Some(format!("{} != {}", label(key)?, literal(value)?));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Some(format!("{} == {}", label(key)?, literal(value)?));
    }
    match term.strip_prefix('!') {
        Some(key) => Some(format!("!has({})", label(key)?)),
        None => Some(format!("has({})", label(term)?)),
    }
}

/// A label key as kubectl allows it (non-empty; letters, digits, `-_./`).
fn label(key: &str) -> Option<&str> {
    let key = key.trim();
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "-_./".contains(character));
    valid.then_some(key)
}

/// A label value as a quoted selector literal (kubectl values hold no quotes or spaces).
fn literal(value: &str) -> Option<String> {
    let value = value.trim();
    let valid = value
        .chars()
        .all(|character| character.is_ascii_alphanumeric() || "-_.".contains(character));
    valid.then(|| format!("\"{value}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_forms_are_rewritten() {
        assert_eq!(
            kubectl_equivalent("zone=a").as_deref(),
            Some("zone == \"a\"")
        );
        assert_eq!(
            kubectl_equivalent("zone==a, role!=db,gpu,!spot").as_deref(),
            Some("zone == \"a\" && role != \"db\" && has(gpu) && !has(spot)")
        );
        assert_eq!(
            kubectl_equivalent("app.kubernetes.io/name=web").as_deref(),
            Some("app.kubernetes.io/name == \"web\"")
        );
    }

    #[test]
    fn what_is_not_a_kubectl_equality_selector_gets_no_suggestion() {
        assert_eq!(kubectl_equivalent("zone in (a,b)"), None);
        assert_eq!(kubectl_equivalent("zone=\"a\""), None);
        assert_eq!(kubectl_equivalent("=a"), None);
        assert_eq!(kubectl_equivalent(""), None);
    }
}
