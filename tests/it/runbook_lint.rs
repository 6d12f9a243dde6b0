//! `runbook lint` catches each defect class: one fixture directory per class under
//! `tests/fixtures/runbooks/`, with the findings users see snapshotted.

use std::path::PathBuf;

use netctl::plan::lint;

fn findings(case: &str) -> String {
    let path = PathBuf::from("tests/fixtures/runbooks").join(case);
    let findings = lint::lint_paths(&[path]).unwrap();
    assert!(
        !findings.is_empty(),
        "fixture `{case}` produced no findings"
    );
    findings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

macro_rules! fixture {
    ($test:ident, $case:literal, $code:literal) => {
        #[test]
        fn $test() {
            let text = findings($case);
            assert!(text.contains(concat!("[", $code, "]")), "{text}");
            insta::assert_snapshot!($case, text);
        }
    };
}

fixture!(
    schema_errors_name_file_line_and_column,
    "schema-error",
    "schema"
);
fixture!(
    schema_errors_name_the_allowed_values,
    "schema-error-phase",
    "schema"
);
fixture!(
    undefined_template_variables,
    "undefined-variable",
    "undefined-variable"
);
fixture!(template_syntax_errors, "template-syntax", "template-syntax");
fixture!(unknown_actions, "unknown-action", "unknown-action");
fixture!(
    invalid_action_arguments,
    "invalid-arguments",
    "invalid-arguments"
);
fixture!(
    serial_needs_foreach,
    "serial-without-foreach",
    "invalid-arguments"
);
fixture!(duplicate_step_ids, "duplicate-id", "duplicate-id");
fixture!(
    a_gate_inside_an_uncuttable_span,
    "spans",
    "gate-inside-span"
);
fixture!(dangling_needs, "dangling-need", "dangling-need");
fixture!(cycles_are_named, "cycle", "cycle");
fixture!(
    needs_on_a_later_phase,
    "needs-later-phase",
    "needs-later-phase"
);
fixture!(
    requirements_that_never_match,
    "semver-never-matches",
    "requirement"
);
fixture!(
    requirements_no_upgrade_satisfies,
    "semver-no-upgrade",
    "requirement"
);
fixture!(
    invalid_requirements_and_unknown_edges,
    "semver-invalid",
    "unknown-edge"
);
fixture!(
    a_why_explains_a_requirement,
    "why-without-requirement",
    "why-without-requirement"
);
fixture!(
    irreversible_steps_need_a_gate,
    "ungated-irreversible",
    "ungated-irreversible"
);
fixture!(
    irreversible_steps_need_rollback_advice,
    "irreversible-without-rollback",
    "irreversible-without-rollback"
);
fixture!(command_hygiene, "command-hygiene", "command-hygiene");
fixture!(undo_has_one_shape, "undo-shape", "undo-shape");

#[test]
fn the_shipped_runbook_directory_lints_clean() {
    let findings = lint::lint_paths(&[PathBuf::from("runbooks")]).unwrap();
    assert!(
        findings.is_empty(),
        "{}",
        findings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}
