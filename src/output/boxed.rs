//! Boxed tables in the layout of the Go `tablewriter` upstream's `ipam show` prints
//! (`calicoctl/calicoctl/commands/ipam/show.go`): `+---+` borders, headings centred, cells that
//! read as numbers aligned right and the others left, one space of padding each side.
//!
//! The whole table is held before it is printed (column widths): `ipam show` tables have a row per
//! pool or block, a few thousand at most.

use std::io::{self, Write};

/// Writes `headings` and `rows` as one boxed table.
pub fn write_boxed(out: &mut dyn Write, headings: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let columns = headings.len();
    let mut widths: Vec<usize> = headings.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (index, cell) in row.iter().take(columns).enumerate() {
            widths[index] = widths[index].max(cell.chars().count());
        }
    }
    let border: String = widths
        .iter()
        .map(|width| format!("+{}", "-".repeat(width + 2)))
        .collect::<String>()
        + "+";
    writeln!(out, "{border}")?;
    let mut line = String::new();
    for (heading, width) in headings.iter().zip(&widths) {
        let length = heading.chars().count();
        let left = (width - length) / 2;
        let right = width - length - left;
        line.push_str(&format!(
            "| {}{heading}{} ",
            " ".repeat(left),
            " ".repeat(right)
        ));
    }
    writeln!(out, "{line}|")?;
    writeln!(out, "{border}")?;
    for row in rows {
        let mut line = String::new();
        for (index, width) in widths.iter().enumerate() {
            let cell = row.get(index).map(String::as_str).unwrap_or("");
            if cell.parse::<f64>().is_ok() {
                line.push_str(&format!("| {cell:>width$} "));
            } else {
                line.push_str(&format!("| {cell:<width$} "));
            }
        }
        writeln!(out, "{line}|")?;
    }
    writeln!(out, "{border}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_upstreams() {
        let mut out = Vec::new();
        let rows = vec![
            vec![
                "IP Pool".into(),
                "10.65.0.0/16".into(),
                "65536".into(),
                "5 (0%)".into(),
                "65531 (100%)".into(),
            ],
            vec![
                "Block".into(),
                "10.65.79.0/26".into(),
                "64".into(),
                "5 (8%)".into(),
                "59 (92%)".into(),
            ],
        ];
        write_boxed(
            &mut out,
            &["GROUPING", "CIDR", "IPS TOTAL", "IPS IN USE", "IPS FREE"],
            &rows,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\
+----------+---------------+-----------+------------+--------------+
| GROUPING |     CIDR      | IPS TOTAL | IPS IN USE |   IPS FREE   |
+----------+---------------+-----------+------------+--------------+
| IP Pool  | 10.65.0.0/16  |     65536 | 5 (0%)     | 65531 (100%) |
| Block    | 10.65.79.0/26 |        64 | 5 (8%)     | 59 (92%)     |
+----------+---------------+-----------+------------+--------------+
"
        );
    }
}
