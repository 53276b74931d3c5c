//! The import reader on small made-up crates.

use std::collections::BTreeMap;

use super::imports::{circles, read, Crate, Edges, Leaf};
use super::lex::{lex, Tok};

/// The edges of a crate of `files` (path, text) rooted at `lib.rs`.
fn edges(files: &[(&str, &str)]) -> Edges {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    Crate::new(&files, "lib.rs").edges()
}

/// The files `from` imports.
fn imported(edges: &Edges, from: &str) -> Vec<String> {
    edges[from].keys().cloned().collect()
}

fn leaf(path: &[&str], bind: Option<&str>) -> Leaf {
    Leaf {
        path: path.iter().map(|s| s.to_string()).collect(),
        bind: bind.map(String::from),
        glob: false,
    }
}

const TREE: &str = "mod a; mod x;";
const A: &str = "pub mod b; pub mod c; pub mod d;";
const C: &str = "pub mod e; pub struct F;";

#[test]
fn a_grouped_import_names_each_of_its_modules() {
    let e = edges(&[
        ("lib.rs", TREE),
        ("a/mod.rs", A),
        ("a/b.rs", ""),
        ("a/c.rs", C),
        ("a/c/e.rs", ""),
        ("x.rs", "use crate::a::{b, c};"),
    ]);
    assert_eq!(imported(&e, "x.rs"), ["a/b.rs", "a/c.rs"]);
}

#[test]
fn a_nested_import_with_self_and_renames_is_read_to_its_leaves() {
    let src = read("pub use crate::a::{b::{self, G as H}, c::{e::*, F}, d as _};");
    let uses: Vec<Leaf> = src.uses.into_iter().map(|(_, l)| l).collect();
    let glob = Leaf {
        glob: true,
        ..leaf(&["crate", "a", "c", "e"], None)
    };
    assert_eq!(
        uses,
        [
            leaf(&["crate", "a", "b"], Some("b")),
            leaf(&["crate", "a", "b", "G"], Some("H")),
            glob,
            leaf(&["crate", "a", "c", "F"], Some("F")),
            leaf(&["crate", "a", "d"], None),
        ]
    );
    let e = edges(&[
        ("lib.rs", TREE),
        ("a/mod.rs", A),
        ("a/b.rs", ""),
        ("a/c.rs", C),
        ("a/c/e.rs", ""),
        ("a/d/mod.rs", ""),
        ("x.rs", "use crate::a::{b::{self}, c::{e::*, F}, d as _};"),
    ]);
    assert_eq!(
        imported(&e, "x.rs"),
        ["a/b.rs", "a/c.rs", "a/c/e.rs", "a/d/mod.rs"]
    );
}

#[test]
fn super_and_self_are_relative_to_the_module_they_are_written_in() {
    let e = edges(&[
        ("lib.rs", "mod a; mod x;"),
        ("a/mod.rs", A),
        (
            "a/b.rs",
            "use super::{c::e}; use super::super::x::Y; mod inner { use super::super::d::Z; }",
        ),
        ("a/c.rs", "pub mod e; use self::e::Z;"),
        ("a/c/e.rs", "use super::super::b;"),
        ("a/d.rs", ""),
        ("x.rs", "pub struct Y;"),
    ]);
    assert_eq!(imported(&e, "a/b.rs"), ["a/c/e.rs", "a/d.rs", "x.rs"]);
    assert_eq!(imported(&e, "a/c.rs"), ["a/c/e.rs"]);
    assert_eq!(imported(&e, "a/c/e.rs"), ["a/b.rs"]);
}

#[test]
fn an_import_over_several_lines_with_comments_is_one_import() {
    let x = "pub(crate) use crate::a::{\n    b, // not c::\n    /* d, */ c::{\n        e::{self},\n    },\n};\n";
    let e = edges(&[
        ("lib.rs", TREE),
        ("a/mod.rs", A),
        ("a/b.rs", ""),
        ("a/c.rs", C),
        ("a/c/e.rs", ""),
        ("a/d.rs", ""),
        ("x.rs", x),
    ]);
    assert_eq!(imported(&e, "x.rs"), ["a/b.rs", "a/c/e.rs"]);
}

#[test]
fn imports_in_function_bodies_and_paths_in_code_count_and_strings_do_not() {
    let x = r##"
        fn f() {
            use crate::a::b;
            b::g();
            let _ = crate::a::d::H;
            let _ = "crate::a::c";
            let _ = r#"use crate::a::c;"#;
            let _ = ('"', '\'', b'"');
        }
        fn g<'a>(s: &'a str) -> &'a str { super::a::c::e::f(s) }
    "##;
    let e = edges(&[
        ("lib.rs", TREE),
        ("a/mod.rs", A),
        ("a/b.rs", ""),
        ("a/c.rs", C),
        ("a/c/e.rs", ""),
        ("a/d.rs", ""),
        ("x.rs", x),
    ]);
    assert_eq!(imported(&e, "x.rs"), ["a/b.rs", "a/c/e.rs", "a/d.rs"]);
}

#[test]
fn a_re_export_is_followed_to_the_file_that_defines_the_item() {
    let e = edges(&[
        ("lib.rs", TREE),
        (
            "a/mod.rs",
            "mod b; mod c; pub use b::G; pub use c::*; pub struct Own;",
        ),
        ("a/b.rs", "use super::Own; pub struct G;"),
        ("a/c.rs", "pub fn h() {}"),
        ("x.rs", "use crate::a::{G, h}; use crate::a::Own;"),
    ]);
    assert_eq!(imported(&e, "x.rs"), ["a/b.rs", "a/c.rs", "a/mod.rs"]);
    // The parent's re-export is an import of its child; the child's use of its parent is not.
    assert_eq!(imported(&e, "a/mod.rs"), ["a/b.rs", "a/c.rs"]);
    assert!(imported(&e, "a/b.rs").is_empty());
}

#[test]
fn test_only_items_and_modules_are_left_out() {
    let e = edges(&[
        ("lib.rs", TREE),
        ("a/mod.rs", "pub mod b;\n#[cfg(test)]\nmod tests;"),
        ("a/b.rs", ""),
        ("a/tests.rs", "use crate::x;"),
        (
            "x.rs",
            "#[cfg(test)]\nmod tests { use crate::a::b; }\n#[cfg(test)]\nfn f() { crate::a::b::g(); }\nuse crate::a;",
        ),
    ]);
    assert_eq!(imported(&e, "x.rs"), ["a/mod.rs"]);
    assert!(!e.contains_key("a/tests.rs"), "{e:?}");
}

#[test]
fn circles_of_any_length_are_found_and_nothing_else() {
    let e = edges(&[
        ("lib.rs", "mod a; mod b; mod c; mod d;"),
        ("a.rs", "use crate::b::B; pub struct A;"),
        ("b.rs", "use crate::c::C; pub struct B;"),
        ("c.rs", "use crate::{a::A, d}; pub struct C;"),
        ("d.rs", "pub struct D;"),
    ]);
    assert_eq!(circles(&e), [["a.rs", "b.rs", "c.rs"]]);
    let dag = edges(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a.rs", "use crate::{b, c};"),
        ("b.rs", "use crate::c;"),
        ("c.rs", ""),
    ]);
    assert!(circles(&dag).is_empty());
}

#[test]
fn the_lexer_drops_comments_strings_characters_and_lifetimes() {
    let t = lex("/* a /* nested */ b */ r#type::x<'a>('{', \"}\", br##\"\"#\"##) // c");
    let ident = |s: &str| Tok::Ident(s.to_string());
    assert_eq!(
        t,
        [
            ident("type"),
            Tok::Sep,
            ident("x"),
            Tok::P('<'),
            Tok::P('>'),
            Tok::P('('),
            Tok::P(','),
            Tok::P(','),
            Tok::P(')'),
        ]
    );
}
