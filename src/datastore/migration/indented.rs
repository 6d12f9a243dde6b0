//! JSON written as Go's `json.MarshalIndent(value, "", "  ")` writes it (and as
//! `serde_json::to_string_pretty` does), but nested `base` spaces deep: the layout of an entry
//! inside the IPAM part of the migration file, written straight to the output without a second
//! pass to indent each line.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

/// Appends `value` as indented JSON whose lines after the first start `base` spaces in (the
/// caller writes the first line's indentation).
pub fn write(out: &mut Vec<u8>, value: &impl Serialize, base: usize) {
    let mut serializer = serde_json::Serializer::with_formatter(
        out,
        Indented {
            base,
            depth: 0,
            has_value: false,
        },
    );
    // Writing a `Serialize` value of plain data into a vector cannot fail.
    let _ = value.serialize(&mut serializer);
}

/// Two spaces a level, `base` more on every line after the first; empty arrays and objects as
/// `[]` and `{}`.
struct Indented {
    base: usize,
    depth: usize,
    has_value: bool,
}

impl Indented {
    fn new_line<W: ?Sized + Write>(&self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b"\n")?;
        for _ in 0..self.base + 2 * self.depth {
            writer.write_all(b" ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.new_line(writer)?;
        }
        writer.write_all(bracket)
    }

    fn element<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        self.new_line(writer)
    }
}

impl Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.element(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.element(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// What the export wrote before: the pretty text with every line after the first indented.
    fn pretty_then_indented(value: &serde_json::Value, base: usize) -> String {
        let text = serde_json::to_string_pretty(value).unwrap();
        let pad = " ".repeat(base);
        text.lines()
            .enumerate()
            .map(|(index, line)| {
                if index == 0 {
                    line.to_string()
                } else {
                    format!("{pad}{line}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_layout_is_the_pretty_text_indented() {
        let values = [
            json!({"Key": "/calico/ipam/v2/handle/a", "Value": {"block": {"10.0.0.0/26": 1}, "deleted": false}, "TTL": 0}),
            json!({"cidr": "10.0.0.0/26", "affinity": null, "allocations": [0, null, 2], "unallocated": [], "attributes": [{}, {"handle_id": "x\ny\"", "secondary": {"node": "n"}}], "empty": {}}),
            json!([]),
            json!({}),
            json!([[], [{}], [1, [2, []]]]),
            json!("text"),
            json!(1.5),
        ];
        for base in [0, 2, 4] {
            for value in &values {
                let mut out = Vec::new();
                super::write(&mut out, value, base);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    pretty_then_indented(value, base),
                    "{value} at {base}"
                );
            }
        }
    }
}
