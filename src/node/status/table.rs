//! The boxed peer table of `calicoctl node status`, drawn as upstream draws it in v3.29–v3.32
//! (olekukonko/tablewriter v0.0.5 with its defaults), so scripts and eyes used to it read it
//! unchanged:
//!
//! ```text
//! +--------------+-------------------+-------+----------+-------------+
//! | PEER ADDRESS |     PEER TYPE     | STATE |  SINCE   |    INFO     |
//! +--------------+-------------------+-------+----------+-------------+
//! | 172.17.8.102 | node-to-node mesh | up    | 23:30:04 | Established |
//! +--------------+-------------------+-------+----------+-------------+
//! ```
//!
//! Headings are upper-cased and centred (an odd gap puts the extra space on the right); cells are
//! left-aligned, numbers right-aligned; a cell wider than 30 characters is wrapped at spaces into
//! lines of at most 30 (a longer word widens its column), choosing the breaks that leave the
//! least ragged lines, as tablewriter does (`Active Socket: Connection refused` becomes two
//! lines).

use super::bird::{BgpPeer, IpVersion};

/// Where tablewriter wraps a cell.
const WRAP_WIDTH: usize = 30;
/// tablewriter's penalty for a line longer than the limit.
const LONG_LINE_PENALTY: usize = 100_000;

/// The peer table of one daemon, or upstream's line when it has no peers.
pub fn peer_table(peers: &[BgpPeer], version: IpVersion) -> String {
    if peers.is_empty() {
        return format!("No IPv{} peers found.\n", version.number());
    }
    let rows = peers
        .iter()
        .map(|peer| {
            vec![
                peer.peer_ip.clone(),
                peer.peer_type.describe().to_string(),
                peer.state.clone(),
                peer.since.clone(),
                peer.info_cell(),
            ]
        })
        .collect::<Vec<_>>();
    boxed_table(
        &["Peer address", "Peer type", "State", "Since", "Info"],
        &rows,
    )
}

/// A table with tablewriter v0.0.5's default look.
pub fn boxed_table(headings: &[&str], rows: &[Vec<String>]) -> String {
    let heading_cells: Vec<Vec<String>> = headings
        .iter()
        .map(|heading| wrap(&heading.to_uppercase()))
        .collect();
    let row_cells: Vec<Vec<Vec<String>>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| wrap(cell)).collect())
        .collect();
    let mut widths = vec![0; headings.len()];
    for cells in std::iter::once(&heading_cells).chain(&row_cells) {
        for (width, lines) in widths.iter_mut().zip(cells) {
            for line in lines {
                *width = (*width).max(line.chars().count());
            }
        }
    }
    let rule: String = widths
        .iter()
        .map(|width| "-".repeat(width + 2))
        .fold("+".to_string(), |line, dashes| line + &dashes + "+")
        + "\n";
    let mut out = rule.clone();
    write_row(&mut out, &heading_cells, &widths, Align::Centre);
    out.push_str(&rule);
    for cells in &row_cells {
        write_row(&mut out, cells, &widths, Align::Cell);
    }
    out.push_str(&rule);
    out
}

#[derive(Clone, Copy)]
enum Align {
    Centre,
    /// Numbers right, everything else left.
    Cell,
}

fn write_row(out: &mut String, cells: &[Vec<String>], widths: &[usize], align: Align) {
    let height = cells.iter().map(Vec::len).max().unwrap_or(1);
    for index in 0..height {
        for (lines, width) in cells.iter().zip(widths) {
            let text = lines.get(index).map(String::as_str).unwrap_or("");
            let gap = width.saturating_sub(text.chars().count());
            let (left, right) = match align {
                Align::Centre => (gap / 2, gap - gap / 2),
                Align::Cell if is_number(text) => (gap, 0),
                Align::Cell => (0, gap),
            };
            out.push_str("| ");
            out.push_str(&" ".repeat(left));
            out.push_str(text);
            out.push_str(&" ".repeat(right));
            out.push(' ');
        }
        out.push_str("|\n");
    }
}

/// tablewriter's test for right-aligned cells: a decimal number (`12`, `-1,234.5`) or a percentage.
fn is_number(text: &str) -> bool {
    let text = text.trim();
    if let Some(percent) = text.strip_suffix('%') {
        let digits = percent.strip_prefix('-').unwrap_or(percent);
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        return !whole.is_empty()
            && whole.bytes().all(|byte| byte.is_ascii_digit())
            && fraction.bytes().all(|byte| byte.is_ascii_digit());
    }
    let text = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    let fraction_ok = fraction.is_none_or(|fraction| {
        !fraction.is_empty() && fraction.bytes().all(|byte| byte.is_ascii_digit())
    });
    let plain = !whole.is_empty() && whole.bytes().all(|byte| byte.is_ascii_digit());
    let grouped = {
        let mut groups = whole.split(',');
        let first = groups.next().unwrap_or("");
        (1..=3).contains(&first.len())
            && first.bytes().all(|byte| byte.is_ascii_digit())
            && groups.all(|group| group.len() == 3 && group.bytes().all(|b| b.is_ascii_digit()))
    };
    fraction_ok && (plain || grouped)
}

/// A cell's lines: the cell itself when it fits in 30 characters, else its words wrapped.
fn wrap(cell: &str) -> Vec<String> {
    let width = cell.chars().count();
    if width <= WRAP_WIDTH {
        return vec![cell.to_string()];
    }
    let words: Vec<&str> = cell.split(' ').collect();
    let longest = words
        .iter()
        .map(|word| word.chars().count())
        .max()
        .unwrap_or(0);
    let limit = WRAP_WIDTH.max(longest);
    wrap_words(&words, limit)
        .into_iter()
        .map(|line| line.join(" "))
        .collect()
}

/// The least ragged breaks (the sum of the squared space left on each line but the last, lines
/// over the limit paying a penalty), as tablewriter's `WrapWords` chooses them.
fn wrap_words<'a>(words: &[&'a str], limit: usize) -> Vec<Vec<&'a str>> {
    let count = words.len();
    let widths: Vec<usize> = words.iter().map(|word| word.chars().count()).collect();
    // The width of words[i..=j] joined by single spaces.
    let span = |i: usize, j: usize| widths[i..=j].iter().sum::<usize>() + (j - i);
    let mut cost = vec![usize::MAX; count + 1];
    let mut next = vec![count; count];
    cost[count] = 0;
    for i in (0..count).rev() {
        if span(i, count - 1) <= limit {
            cost[i] = 0;
            next[i] = count;
            continue;
        }
        for j in i + 1..count {
            let length = span(i, j - 1);
            let slack = limit as i64 - length as i64;
            let mut candidate = (slack * slack) as usize + cost[j];
            if length > limit {
                candidate += LONG_LINE_PENALTY;
            }
            if candidate < cost[i] {
                cost[i] = candidate;
                next[i] = j;
            }
        }
    }
    let mut lines = Vec::new();
    let mut i = 0;
    while i < count {
        lines.push(words[i..next[i]].to_vec());
        i = next[i];
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::super::bird::PeerType;
    use super::*;

    fn peer(address: &str, peer_type: PeerType, state: &str, bgp: &str, info: &str) -> BgpPeer {
        BgpPeer {
            peer_ip: address.into(),
            peer_type,
            state: state.into(),
            since: "23:30:04".into(),
            bgp_state: bgp.into(),
            info: info.into(),
        }
    }

    #[test]
    fn the_table_looks_like_upstreams() {
        let table = peer_table(
            &[peer(
                "172.17.8.102",
                PeerType::Mesh,
                "up",
                "Established",
                "",
            )],
            IpVersion::V4,
        );
        assert_eq!(
            table,
            "\
+--------------+-------------------+-------+----------+-------------+
| PEER ADDRESS |     PEER TYPE     | STATE |  SINCE   |    INFO     |
+--------------+-------------------+-------+----------+-------------+
| 172.17.8.102 | node-to-node mesh | up    | 23:30:04 | Established |
+--------------+-------------------+-------+----------+-------------+
"
        );
        assert_eq!(peer_table(&[], IpVersion::V6), "No IPv6 peers found.\n");
    }

    #[test]
    fn long_info_is_wrapped_onto_more_lines() {
        let table = peer_table(
            &[peer(
                "10.0.0.9",
                PeerType::Node,
                "start",
                "Active",
                "Socket: Connection refused",
            )],
            IpVersion::V4,
        );
        assert!(
            table.contains(
                "| 10.0.0.9     | node specific | start | 23:30:04 | Active Socket: Connection |\n\
                 |              |               |       |          | refused                   |\n"
            ),
            "{table}"
        );
    }

    #[test]
    fn numbers_are_right_aligned() {
        assert!(is_number("12"));
        assert!(is_number("-1,234.5"));
        assert!(is_number("50%"));
        assert!(!is_number("172.17.8.102"));
        assert!(!is_number("23:30:04"));
        assert!(!is_number("1,23"));
        let table = boxed_table(&["Name", "Count"], &[vec!["a".into(), "7".into()]]);
        assert!(table.contains("| a    |     7 |"), "{table}");
    }

    #[test]
    fn breaks_leave_the_least_ragged_lines() {
        // Filling each line first would give `aaa bb`, `cc`, `ddddd` (16 against 10).
        let words: Vec<&str> = "aaa bb cc ddddd".split(' ').collect();
        let lines: Vec<String> = wrap_words(&words, 6)
            .into_iter()
            .map(|line| line.join(" "))
            .collect();
        assert_eq!(lines, ["aaa", "bb cc", "ddddd"]);
    }
}
