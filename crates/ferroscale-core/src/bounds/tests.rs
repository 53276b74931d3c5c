use proptest::prelude::*;
use serde_norway::Value;

use super::scan::{json_over, yaml_over};
use super::*;

/// The nesting the parser builds: collections inside collections.
fn depth(v: &Value) -> usize {
    match v {
        Value::Sequence(s) => 1 + s.iter().map(depth).max().unwrap_or(0),
        Value::Mapping(m) => {
            1 + m
                .iter()
                .map(|(k, v)| depth(k).max(depth(v)))
                .max()
                .unwrap_or(0)
        }
        Value::Tagged(t) => depth(&t.value),
        _ => 0,
    }
}

/// The least limit the YAML scan lets `text` through at.
fn scanned(text: &str) -> usize {
    (0..)
        .find(|&max| yaml_over(text.as_bytes(), max).is_none())
        .unwrap()
}

#[test]
fn the_scan_counts_block_and_flow_nesting() {
    assert_eq!(scanned("a: 1\nb: 2\n"), 1);
    assert_eq!(scanned("a:\n  b:\n    c: 1\n"), 3);
    assert_eq!(scanned("a: [1, {b: [2]}]\n"), 4);
    // A flow collection at a line's start counts the line's block level too: one over.
    assert_eq!(scanned("[[[[]]]]"), 5);
    assert_eq!(scanned("{\"a\":{\"b\":[1]}}"), 4);
    assert_eq!(json_over(b"{\"a\":{\"b\":[1]}}", 2), Some(1));
    assert_eq!(json_over(b"{\"a\":{\"b\":[1]}}", 3), None);
}

#[test]
fn brackets_in_quotes_comments_block_scalars_and_plain_scalars_do_not_count() {
    for text in [
        "a: \"[[[[[[\"\nb: '{{{{{{ '' [['\n",
        "a: 1 # [[[[[[[[\n# {{{{{{{{\n",
        "a: |\n  [[[[[[[[\n  {{{{{{\nb: 1\n",
        "- >-\n    [[[[[[[[[\n",
        "a: x[[[[[[[\nb: y{{{{{{{{\n",
        "a: \"multi [[[[[\n  line [[[[[\"\n",
    ] {
        assert!(scanned(text) <= 2, "{text:?}: {}", scanned(text));
        let v: Value = serde_norway::from_str(text).unwrap();
        assert!(depth(&v) <= 2);
    }
    assert_eq!(json_over(b"[\"[[[[[[\\\"[[[[\"]", 1), None);
}

#[test]
fn refusals_name_the_input_and_the_limit() {
    let deep = format!("a: {}", "[".repeat(40));
    let e = POLICY.check_yaml(&deep).unwrap_err();
    assert_eq!(
        e.to_string(),
        "descheduler policy: line 1 nests deeper than its depth limit of 32 levels"
    );
    let big = "#".repeat(POLICY.max_bytes + 1);
    let e = POLICY.check_yaml(&big).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "descheduler policy: {} bytes is over its size limit of {} bytes",
            POLICY.max_bytes + 1,
            POLICY.max_bytes
        )
    );
    let e = PRIORITIES.read(big.as_bytes(), None).unwrap_err();
    assert!(e.to_string().contains("priorities"), "{e}");
    let e = PRIORITIES.read(&b""[..], Some(u64::MAX)).unwrap_err();
    assert!(e.to_string().contains("size limit of 262144 bytes"), "{e}");
    assert_eq!(
        PRIORITIES.read(&b"10: [a]"[..], Some(7)).unwrap(),
        "10: [a]"
    );
}

/// A 200 KB priority ConfigMap nested as deep as it goes (what took the parser 29 s) is refused by
/// the scan, which reads it once.
#[test]
fn a_deep_input_is_refused_at_once() {
    for text in [
        "{a: ".repeat(50_000),
        "[".repeat(200_000),
        "- ".repeat(100_000),
    ] {
        let started = std::time::Instant::now();
        assert!(matches!(
            PRIORITIES.check_yaml(&text),
            Err(Exceeded::Depth { .. })
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
    let mut block = String::new();
    for i in 0..40 {
        block.push_str(&" ".repeat(i));
        block.push_str("a:\n");
    }
    assert_eq!(
        PRIORITIES.check_yaml(&block),
        Err(Exceeded::Depth {
            input: "priorities",
            max: DEPTH,
            line: 33
        })
    );
}

/// Pieces of YAML that change how the scan reads what follows.
const TOKENS: &[&str] = &[
    "[", "]", "{", "}", ", ", ",", ": ", ":", "- ", "-", "? ", "'", "''", "\"", "\\\"", "\\", " #",
    "#", "|", ">", "\n", "  ", " ", "a", "b1", "&x ", "!t ", "*x", "---\n", "...\n", "\r\n", "\t",
    "%",
];

pub(super) fn tokens() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|t| t.concat())
}

/// Nested collections of every style, `depth` deep, with quotes, comments and block scalars holding
/// brackets between them.
fn nested() -> impl Strategy<Value = String> {
    prop::collection::vec((0u8..6, any::<bool>()), 1..60).prop_map(|layers| {
        let mut text = String::new();
        let mut close = String::new();
        let mut flow = false;
        for (i, (kind, noise)) in layers.iter().enumerate() {
            let pad = " ".repeat(i * 2);
            if *noise && !flow && *kind == 0 {
                text.push_str(&format!("{pad}q: \"[[{{\" # [[\n{pad}s: |\n{pad}  [[[\n"));
            }
            match (kind, flow) {
                (0, false) => text.push_str(&format!("{pad}k{i}:\n")),
                (1, false) => text.push_str(&format!("{pad}- \n")),
                (2 | 4, _) => {
                    text.push_str(&format!("{pad}{{k: 'x[', v: "));
                    close.insert(0, '}');
                    flow = true;
                }
                (3 | 5, _) => {
                    text.push_str(&format!("{pad}[\"]\", "));
                    close.insert(0, ']');
                    flow = true;
                }
                _ => {
                    text.push('[');
                    close.insert(0, ']');
                }
            }
        }
        if !flow {
            text.push_str(&" ".repeat(layers.len() * 2));
        }
        text.push('x');
        text.push_str(&close);
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The scan never sees less nesting than the parser builds, whatever the text.
    #[test]
    fn the_scan_bounds_what_the_parser_builds(text in tokens()) {
        if let Ok(v) = serde_norway::from_str::<Value>(&text) {
            let d = depth(&v);
            prop_assert!(scanned(&text) >= d, "{text:?}: parser {d}, scan {}", scanned(&text));
        }
    }

    #[test]
    fn nested_documents_are_counted_at_least_as_deep_as_they_parse(text in nested()) {
        let v: Value = serde_norway::from_str(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let (d, s) = (depth(&v), scanned(&text));
        prop_assert!(s >= d && s <= 2 * d + 2, "{text:?}: parser {d}, scan {s}");
    }

    /// Any text is taken or refused by the limits, never more than they say, and JSON likewise.
    #[test]
    fn the_limits_hold_for_any_text(text in tokens(), max_depth in 0usize..8, max_bytes in 0usize..200) {
        let b = Bounds { input: "test", max_bytes, max_depth };
        match b.check_yaml(&text) {
            Ok(()) => prop_assert!(text.len() <= max_bytes && scanned(&text) <= max_depth),
            Err(Exceeded::Size { bytes, .. }) => prop_assert!(bytes as usize == text.len() && text.len() > max_bytes),
            Err(Exceeded::Depth { line, .. }) => prop_assert!(line >= 1 && line <= text.split('\n').count()),
        }
        if b.check_json(&text).is_ok() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                prop_assert!(json_depth(&v) <= max_depth);
            }
        }
    }
}

fn json_depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(json_depth).max().unwrap_or(0),
        serde_json::Value::Object(o) => 1 + o.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Arbitrary documents with scalars full of indicators (brackets, quotes, `#`, `: `, newlines).
fn documents() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        "[\\[\\]{}:,#'\"|>\\- a\\\\\n]{0,8}".prop_map(serde_json::Value::from),
        any::<i32>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ];
    leaf.prop_recursive(12, 96, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[\\[{:#'\"a\\- ]{1,4}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Documents written as block YAML, as JSON and as pretty JSON: the YAML scan sees at least the
    /// depth the parser builds, and the JSON scan exactly that depth.
    #[test]
    fn written_documents_are_scanned_at_least_as_deep_as_they_parse(doc in documents()) {
        let d = json_depth(&doc);
        let texts = [
            serde_norway::to_string(&doc).unwrap(),
            serde_json::to_string(&doc).unwrap(),
            serde_json::to_string_pretty(&doc).unwrap(),
        ];
        for (i, text) in texts.iter().enumerate() {
            let parsed: Value = serde_norway::from_str(text).unwrap();
            prop_assert_eq!(depth(&parsed), d, "{:?}", text);
            prop_assert!(scanned(text) >= d, "{text:?}: parser {d}, scan {}", scanned(text));
            if i > 0 {
                prop_assert!(json_over(text.as_bytes(), d).is_none(), "{text:?}");
                prop_assert!(d == 0 || json_over(text.as_bytes(), d - 1).is_some(), "{text:?}");
            }
        }
    }
}
