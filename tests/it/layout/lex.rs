//! The tokens of a Rust source file that matter to its imports: names, `::` and single punctuation;
//! comments (nested block comments too), strings (raw, byte, C), character literals and lifetimes are
//! dropped, so a path in a doc comment or a string is no import.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A name, keyword or number (`r#name` as `name`; `$crate` as `crate`).
    Ident(String),
    /// `::`.
    Sep,
    /// Any other character that is not white space.
    P(char),
}

fn word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index after a string's closing quote, from the index after its opening one.
fn after_string(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i] != '"' {
        i += if s[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// The index after a raw string's end, from the index of its first `#` or its quote.
fn after_raw_string(s: &[char], mut i: usize) -> usize {
    let mut hashes = 0;
    while s.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < s.len() {
        if s[i] == '"' && (1..=hashes).all(|k| s.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

pub fn lex(text: &str) -> Vec<Tok> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c.is_whitespace() || c == '$' {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = after_string(&s, i + 1);
        } else if c == '\'' {
            if next == Some('\\') {
                // An escaped character: past the quote, the backslash and the escaped one.
                i += 3;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                // A lifetime or a label.
                i += 1;
                while i < s.len() && word(s[i]) {
                    i += 1;
                }
            }
        } else if word(c) {
            let start = i;
            while i < s.len() && word(s[i]) {
                i += 1;
            }
            let w: String = s[start..i].iter().collect();
            let at = s.get(i).copied();
            if w == "r" && at == Some('#') && s.get(i + 1).is_some_and(|&c| word(c)) {
                let name = i + 1;
                i = name;
                while i < s.len() && word(s[i]) {
                    i += 1;
                }
                out.push(Tok::Ident(s[name..i].iter().collect()));
            } else if matches!(w.as_str(), "r" | "br" | "cr") && matches!(at, Some('"' | '#')) {
                i = after_raw_string(&s, i);
            } else if matches!(w.as_str(), "b" | "c") && at == Some('"') {
                i = after_string(&s, i + 1);
            } else if w == "b" && at == Some('\'') {
                // A byte: the quote is read next, as a character.
            } else {
                out.push(Tok::Ident(w));
            }
        } else if c == ':' && next == Some(':') {
            out.push(Tok::Sep);
            i += 2;
        } else {
            out.push(Tok::P(c));
            i += 1;
        }
    }
    out
}
