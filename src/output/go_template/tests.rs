//! Templates and the text `kubectl label --local -f FILE x- -o go-template=...` (kubectl v1.32)
//! printed for the same object; `tests/it/calicoctl_surface.rs` runs kubectl itself beside netctl.

use serde_json::json;

use super::{GoTemplate, TemplateError};

fn object() -> serde_json::Value {
    json!({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
           "metadata": {"name": "a", "labels": {"z": "1", "a": "2", "m": "3"}},
           "spec": {"order": 1000000, "f": 1.5, "fe": 1e21, "t": true, "n": null, "s": "x",
                    "ingress": [{"action": "Allow", "ports": [80, 443]}, {"action": "Deny"}]}})
}

fn render(template: &str) -> Result<String, TemplateError> {
    GoTemplate::parse(template)?.render(&object())
}

#[test]
fn templates_print_what_kubectl_prints() {
    for (template, kubectl) in [
        ("{{.metadata.labels}}", "map[a:2 m:3 z:1]"),
        (
            "{{range $k, $v := .metadata.labels}}{{$k}}={{$v}},{{end}}",
            "a=2,m=3,z=1,",
        ),
        (
            "{{.spec.ingress}}",
            "[map[action:Allow ports:[80 443]] map[action:Deny]]",
        ),
        (
            "{{.spec.order}} {{.spec.f}} {{.spec.fe}} {{.spec.t}}",
            "1000000 1.5 1e+21 true",
        ),
        (
            "{{.spec.n}}|{{.spec.missing}}|{{index .spec \"n\"}}",
            "<no value>|<no value>|<no value>",
        ),
        (
            "{{printf \"%5d|%s|%q|%v\" .spec.order .spec.s .spec.s .spec.ingress}}",
            "1000000|x|\"x\"|[map[action:Allow ports:[80 443]] map[action:Deny]]",
        ),
        (
            "{{range .spec.ingress}}{{.action}}{{if .ports}} {{len .ports}}{{end}};{{end}}",
            "Allow 2;Deny;",
        ),
        (
            "{{- /* c */ -}} {{ if eq .spec.s \"x\" \"y\" }}yes{{else}}no{{end}}",
            "yes",
        ),
        (
            "{{with .spec.missing}}w{{else}}nw{{end}} {{len .metadata.labels}} {{index .spec.ingress 1 \"action\"}}",
            "nw 3 Deny",
        ),
        (
            "{{range $i, $e := .spec.ingress}}{{$i}}:{{$e.action}} {{end}}{{define \"x\"}}X{{.}}{{end}}{{template \"x\" .spec.s}}",
            "0:Allow 1:Deny Xx",
        ),
        ("{{.spec.missing.deeper}}", "<no value>"),
        (
            "{{ .spec.order | printf \"%v\" }} {{ gt .spec.order 5 }} {{ slice .spec.s 0 1 }} {{not .spec.t}} {{and 1 0}} {{or 0 \"q\"}}",
            "1000000 true x false 0 q",
        ),
        (
            "{{range .spec.ingress}}{{if eq .action \"Deny\"}}{{break}}{{end}}{{.action}}{{end}}",
            "Allow",
        ),
        (
            "{{.metadata.labels.z}} {{print 1 2 \"a\" \"b\" 3}} {{println \"x\"}}",
            "1 1 2ab3 x\n",
        ),
        (
            "{{ printf \"%.2f %x %t %08.3f\" .spec.f 255 true 3.14159 }}",
            "1.50 ff true 0003.142",
        ),
        (
            "{{exists .spec \"s\"}} {{base64decode \"aGVsbG8=\"}}",
            "true hello",
        ),
    ] {
        assert_eq!(render(template).as_deref(), Ok(kubectl), "{template}");
    }
}

#[test]
fn control_structures_variables_and_else_chains() {
    for (template, expected) in [
        (
            "{{if .spec.missing}}a{{else if .spec.t}}b{{else}}c{{end}}",
            "b",
        ),
        ("{{with $x := .spec.s}}{{$x}}{{.}}{{end}}", "xx"),
        (
            "{{$n := 0}}{{range .spec.ingress}}{{$n = 1}}{{end}}{{$n}}",
            "1",
        ),
        ("{{range .spec.none}}a{{else}}empty{{end}}", "empty"),
        ("{{range 3}}{{.}}{{end}}", "012"),
        (
            "{{range .spec.ingress}}{{if eq .action \"Allow\"}}{{continue}}{{end}}{{.action}}{{end}}",
            "Deny",
        ),
        ("{{block \"b\" .spec.s}}[{{.}}]{{end}}", "[x]"),
        (
            "{{join .metadata.labels \",\"}} {{joinAndTruncate .spec.ingress \" \" 12}}",
            "a=2,m=3,z=1 map[actio...",
        ),
        (
            "{{html \"<a href='x'>\"}} {{urlquery \"a b&c\"}} {{js \"it's\"}}",
            "&lt;a href=&#39;x&#39;&gt; a+b%26c it\\'s",
        ),
        (
            // Go's JSEscapeString: `=` and markup as \uXXXX, other control characters too.
            "{{js \"a=b<&>\\\\\\\"\\t\\u0001\"}} {{html \"\\u0000\\\"\"}}",
            "a\\u003Db\\u003C\\u0026\\u003E\\\\\\\"\\t\\u0001 \u{fffd}&#34;",
        ),
        (
            "{{`raw\\n`}} {{'a'}} {{0x1F}} {{1_000}} {{-2.5e3}}",
            "raw\\n 97 31 1000 -2500",
        ),
    ] {
        assert_eq!(render(template).as_deref(), Ok(expected), "{template}");
    }
}

#[test]
fn errors_read_as_gos() {
    assert_eq!(
        render("{{nofunc .}}").unwrap_err().to_string(),
        "template: output:1: function \"nofunc\" not defined"
    );
    assert_eq!(
        render("{{.spec.s.deeper}}").unwrap_err().to_string(),
        "template: output:1: executing \"output\" at <.spec.s.deeper>: can't evaluate field deeper in type string"
    );
    assert!(
        render("{{if .spec.t}}")
            .unwrap_err()
            .to_string()
            .contains("missing {{end}} of if")
    );
    assert!(
        render("{{end}}")
            .unwrap_err()
            .to_string()
            .contains("unexpected {{end}}")
    );
    assert!(
        render("{{break}}")
            .unwrap_err()
            .to_string()
            .contains("outside {{range}}")
    );
    assert!(
        render("{{lt .spec.order 1.5}}")
            .unwrap_err()
            .to_string()
            .contains("incompatible types for comparison")
    );
    assert!(
        render("{{index .spec.ingress 5}}")
            .unwrap_err()
            .to_string()
            .contains("index out of range: 5")
    );
    assert!(
        render("{{template \"none\"}}")
            .unwrap_err()
            .to_string()
            .contains("no such template")
    );
    assert!(render("{{\"unterminated}}").is_err());
}
