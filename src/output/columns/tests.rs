//! Cells as upstream prints them.

use super::cells::*;
use super::*;

fn order_text(text: &str) -> String {
    float_cell(Some(&serde_json::from_str(text).unwrap()))
}

#[test]
fn orders_print_as_go_prints_a_float64() {
    assert_eq!(order_text("100"), "100");
    assert_eq!(order_text("-3"), "-3");
    assert_eq!(order_text("100.0"), "100");
    assert_eq!(order_text("1.5"), "1.5");
    assert_eq!(order_text("0"), "0");
    assert_eq!(order_text("0.0001"), "0.0001");
    assert_eq!(order_text("0.00001"), "1e-05");
    assert_eq!(order_text("999999"), "999999");
    assert_eq!(order_text("1000000"), "1e+06");
    assert_eq!(order_text("1234567.5"), "1.2345675e+06");
    assert_eq!(order_text("1e21"), "1e+21");
    assert_eq!(order_text("1.25e-122"), "1.25e-122");
}

#[test]
fn other_numbers_print_plainly() {
    assert_eq!(
        scalar(Some(&serde_json::json!(4294967295u64))),
        "4294967295"
    );
    assert_eq!(scalar(Some(&serde_json::json!(true))), "true");
    assert_eq!(scalar(None), "");
}

#[test]
fn every_column_names_the_spec_fields_it_reads() {
    for kind in Kind::ALL {
        for column in definition(kind).all {
            assert!(
                spec_fields_read(kind, column.heading).is_some(),
                "{kind} {} reads unlisted fields",
                column.heading
            );
        }
    }
}

#[test]
fn lists_are_cut_at_eighty_characters() {
    let exactly = "a".repeat(80);
    assert_eq!(truncate(exactly.clone()), exactly);
    let longer = "b".repeat(81);
    let cut = truncate(longer);
    assert_eq!(cut.len(), 80);
    assert!(cut.ends_with("bbb..."));
}
