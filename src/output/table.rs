//! Aligned text tables that stream: rows are written as they arrive, with bounded memory.
//!
//! The layout is upstream's (Go `text/tabwriter` with minimum width 5, padding 3, space padding, and
//! every cell terminated by a tab, `calicoctl/calicoctl/commands/common/printer.go`): each cell,
//! the last one included, is padded to its column's width, so lines keep trailing spaces; a column
//! is as wide as its widest
//! cell plus 3, and at least 5. Widths are counted in characters, as tabwriter counts runes.
//!
//! Trade-off: tabwriter sees the whole table before printing anything, which needs the whole list in
//! memory. [`TableWriter`] instead buffers a chunk of rows (1000 by default), computes widths over the
//! chunk, prints it, and starts the next chunk with the widths reached so far — widths only grow. A
//! table of at most one chunk is byte-for-byte what upstream prints. In a longer one, a later chunk
//! whose cells are wider than anything before shifts its columns right from that chunk on; rows before
//! it are already on the terminal and stay as they were. Memory is bounded by one chunk of rows.

use std::io::{self, Write};

/// Rows buffered before widths are fixed for a chunk.
pub const DEFAULT_CHUNK_ROWS: usize = 1000;

const MINIMUM_WIDTH: usize = 5;
const PADDING: usize = 3;

/// How a table's lines end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableStyle {
    /// Upstream's: every cell padded, the last one too, and a blank line after the table (`get`).
    Upstream,
    /// netctl's own tables (`runbook list`, `config view`): each line ends at its last character and
    /// no blank line follows.
    Trimmed,
}

/// Writes one table: the heading row, then rows, then (upstream style) a blank line on
/// [`TableWriter::finish`].
pub struct TableWriter<W: Write> {
    out: W,
    style: TableStyle,
    headings: Vec<String>,
    heading_written: bool,
    rows: Vec<Vec<String>>,
    widths: Vec<usize>,
    chunk_rows: usize,
}

impl<W: Write> TableWriter<W> {
    pub fn new(out: W, headings: Vec<String>) -> TableWriter<W> {
        TableWriter::with_chunk_rows(out, headings, DEFAULT_CHUNK_ROWS)
    }

    /// As [`TableWriter::new`], fixing widths every `chunk_rows` rows (at least 1).
    pub fn with_chunk_rows(out: W, headings: Vec<String>, chunk_rows: usize) -> TableWriter<W> {
        let widths = vec![0; headings.len()];
        TableWriter {
            out,
            style: TableStyle::Upstream,
            headings,
            heading_written: false,
            rows: Vec::new(),
            widths,
            chunk_rows: chunk_rows.max(1),
        }
    }

    /// A table in [`TableStyle::Trimmed`].
    pub fn trimmed(out: W, headings: Vec<String>) -> TableWriter<W> {
        TableWriter {
            style: TableStyle::Trimmed,
            ..TableWriter::new(out, headings)
        }
    }

    /// Adds a row; it is printed once its chunk is full (or at [`TableWriter::finish`]).
    ///
    /// A row with fewer cells than headings gets empty cells; extra cells are dropped. Both would be
    /// bugs in the caller, which builds rows from the same column list as the headings.
    pub fn push_row(&mut self, mut row: Vec<String>) -> io::Result<()> {
        row.resize(self.headings.len(), String::new());
        self.rows.push(row);
        if self.rows.len() >= self.chunk_rows {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Prints what is buffered (the heading row at the latest now) and the blank line that ends
    /// every table, and hands the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_chunk()?;
        if self.style == TableStyle::Upstream {
            self.out.write_all(b"\n")?;
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn flush_chunk(&mut self) -> io::Result<()> {
        if !self.heading_written {
            grow(&mut self.widths, &self.headings);
        }
        for row in &self.rows {
            grow(&mut self.widths, row);
        }
        if !self.heading_written {
            write_line(&mut self.out, self.style, &self.widths, &self.headings)?;
            self.heading_written = true;
        }
        for row in &self.rows {
            write_line(&mut self.out, self.style, &self.widths, row)?;
        }
        self.rows.clear();
        self.out.flush()
    }
}

fn grow(widths: &mut [usize], cells: &[String]) {
    for (width, cell) in widths.iter_mut().zip(cells) {
        let needed = (cell.chars().count() + PADDING).max(MINIMUM_WIDTH);
        *width = (*width).max(needed);
    }
}

fn write_line<W: Write>(
    out: &mut W,
    style: TableStyle,
    widths: &[usize],
    cells: &[String],
) -> io::Result<()> {
    let mut line = String::new();
    for (cell, width) in cells.iter().zip(widths) {
        line.push_str(cell);
        let length = cell.chars().count();
        line.extend(std::iter::repeat_n(' ', width.saturating_sub(length)));
    }
    if style == TableStyle::Trimmed {
        line.truncate(line.trim_end().len());
    }
    line.push('\n');
    out.write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(headings: &[&str], rows: &[&[&str]], chunk_rows: usize) -> String {
        let mut writer = TableWriter::with_chunk_rows(
            Vec::new(),
            headings.iter().map(|heading| heading.to_string()).collect(),
            chunk_rows,
        );
        for row in rows {
            writer
                .push_row(row.iter().map(|cell| cell.to_string()).collect())
                .unwrap();
        }
        String::from_utf8(writer.finish().unwrap()).unwrap()
    }

    #[test]
    fn a_trimmed_table_ends_lines_at_their_last_character() {
        let mut writer = TableWriter::trimmed(Vec::new(), vec!["NAME".into(), "STEPS".into()]);
        writer.push_row(vec!["upgrade".into(), "3".into()]).unwrap();
        let text = String::from_utf8(writer.finish().unwrap()).unwrap();
        assert_eq!(text, "NAME      STEPS\nupgrade   3\n");
    }

    #[test]
    fn layout_matches_upstream_tabwriter() {
        // The example from upstream's system tests (`calicoctl/tests/st/utils/data.py`), plus the
        // blank line.
        assert_eq!(
            table(
                &["NAME", "CIDR", "SELECTOR"],
                &[&["ippool-name1", "10.0.1.0/24", "foo == 'bar'"]],
                1000
            ),
            "NAME           CIDR          SELECTOR       \n\
             ippool-name1   10.0.1.0/24   foo == 'bar'   \n\
             \n"
        );
    }

    #[test]
    fn columns_are_at_least_five_wide_and_empty_cells_are_padded() {
        assert_eq!(
            table(&["A", "B"], &[&["", "x"]], 1000),
            "A    B    \n     x    \n\n"
        );
    }

    #[test]
    fn an_empty_table_still_has_its_heading_and_blank_line() {
        assert_eq!(table(&["NAME"], &[], 1000), "NAME   \n\n");
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        assert_eq!(
            table(&["NAME"], &[&["héhéhé"]], 1000),
            "NAME     \nhéhéhé   \n\n"
        );
    }

    #[test]
    fn later_chunks_keep_and_grow_the_widths() {
        let output = table(
            &["NAME", "NODE"],
            &[
                &["a", "n1"],
                &["b", "n2"],
                &["long-name", "n3"],
                &["c", "n4"],
            ],
            2,
        );
        assert_eq!(
            output,
            "NAME   NODE   \n\
             a      n1     \n\
             b      n2     \n\
             long-name   n3     \n\
             c           n4     \n\
             \n"
        );
    }

    #[test]
    fn rows_are_written_when_a_chunk_fills() {
        let mut writer = TableWriter::with_chunk_rows(Vec::new(), vec!["NAME".to_string()], 2);
        writer.push_row(vec!["a".to_string()]).unwrap();
        assert!(writer.out.is_empty());
        writer.push_row(vec!["b".to_string()]).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&writer.out),
            "NAME   \na      \nb      \n"
        );
        assert!(writer.rows.is_empty());
    }
}
