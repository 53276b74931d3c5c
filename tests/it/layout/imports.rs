//! Which file imports which, read as Rust resolves the paths: every `use` declaration (grouped and
//! nested braces, `self`, `super`, `as`, globs, `pub`/`pub(crate)` ones, over several lines, in function
//! bodies) and every other qualified path in the code (`crate::a::f()`, `super::b::C`, `x::y` through an
//! imported module), each resolved from the module it is written in to the file that defines what it
//! names: a path names a module's file when one exists (`crate::a::b` → `a/b.rs` or `a/b/mod.rs`), and
//! an item re-exported by a `use` is followed to the file that defines it. Items under `#[cfg(test)]`
//! and the files of `#[cfg(test)]` modules are left out; so are comments and strings.

use std::collections::{BTreeMap, BTreeSet};

use super::lex::{lex, Tok};

/// One name a `use` declaration brings in: its path as written (`self` leaves naming their module),
/// the name it binds (none for a glob or `as _`), and whether it is a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub path: Vec<String>,
    pub bind: Option<String>,
    pub glob: bool,
}

/// What one file says, each path with the inline modules (`mod x { … }`) it is written in.
#[derive(Debug, Default)]
pub struct Source {
    pub uses: Vec<(Vec<String>, Leaf)>,
    /// Other paths of two names or more (`a::b`, `crate::c::D`).
    pub paths: Vec<(Vec<String>, Vec<String>)>,
    /// The items it defines at its top level.
    pub defs: BTreeSet<String>,
    /// The module files it declares (`mod x;`), inline modules first.
    pub mods: Vec<Vec<String>>,
}

const DEFINERS: [&str; 8] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

fn name(t: &[Tok], i: usize) -> Option<String> {
    match t.get(i) {
        Some(Tok::Ident(w)) => Some(w.clone()),
        _ => None,
    }
}

/// The index of the bracket that closes the one at `open`.
fn closing(t: &[Tok], open: usize) -> usize {
    let mut depth = 0;
    for (i, tok) in t.iter().enumerate().skip(open) {
        match tok {
            Tok::P('(' | '[' | '{') => depth += 1,
            Tok::P(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    t.len()
}

/// The index after the item (or statement) that starts at `i`: its `;` or its braced body.
fn after_item(t: &[Tok], mut i: usize) -> usize {
    let mut nest = 0;
    while i < t.len() {
        match t[i] {
            Tok::P('(' | '[') => nest += 1,
            Tok::P(')' | ']') => nest -= 1,
            Tok::P(';') if nest == 0 => return i + 1,
            Tok::P('{') if nest == 0 => return closing(t, i) + 1,
            Tok::P('}') if nest == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads one use tree at `i` (after `use`, or inside braces) under `prefix`, to the token after it.
fn use_tree(t: &[Tok], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Leaf>) {
    let mut path = prefix;
    loop {
        match t.get(*i) {
            Some(Tok::Sep) if path.is_empty() => {
                // `::name`: an outside crate.
                path.push("::".into());
                *i += 1;
            }
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                *i += 1;
                if t.get(*i) == Some(&Tok::Sep) {
                    *i += 1;
                    continue;
                }
                if path.last().is_some_and(|l| l == "self") {
                    path.pop();
                }
                let mut bind = path.last().cloned();
                if t.get(*i) == Some(&Tok::Ident("as".into())) {
                    bind = name(t, *i + 1).filter(|n| n != "_");
                    *i += 2;
                }
                out.push(Leaf {
                    path,
                    bind,
                    glob: false,
                });
                return;
            }
            Some(Tok::P('*')) => {
                *i += 1;
                out.push(Leaf {
                    path,
                    bind: None,
                    glob: true,
                });
                return;
            }
            Some(Tok::P('{')) => {
                *i += 1;
                while *i < t.len() {
                    if t[*i] == Tok::P('}') {
                        *i += 1;
                        return;
                    }
                    let before = *i;
                    use_tree(t, i, path.clone(), out);
                    if t.get(*i) == Some(&Tok::P(',')) || *i == before {
                        *i += 1;
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

/// Reads a file's imports, paths, top-level items and module declarations.
pub fn read(text: &str) -> Source {
    let t = lex(text);
    let mut src = Source::default();
    let mut depth = 0;
    // Inline modules open here, with the depth of their body.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let ctx: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
        match &t[i] {
            Tok::P('#') => {
                let inner = t.get(i + 1) == Some(&Tok::P('!'));
                let open = i + 1 + usize::from(inner);
                if t.get(open) != Some(&Tok::P('[')) {
                    i += 1;
                    continue;
                }
                let close = closing(&t, open);
                let test = t[open + 1..close]
                    == [
                        Tok::Ident("cfg".into()),
                        Tok::P('('),
                        Tok::Ident("test".into()),
                        Tok::P(')'),
                    ];
                i = close + 1;
                if test && !inner {
                    i = after_item(&t, i);
                }
            }
            Tok::P('{') => {
                depth += 1;
                i += 1;
            }
            Tok::P('}') => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth -= 1;
                i += 1;
            }
            Tok::Ident(w) if w == "use" && t.get(i + 1) != Some(&Tok::P('<')) => {
                i += 1;
                let mut leaves = Vec::new();
                use_tree(&t, &mut i, Vec::new(), &mut leaves);
                src.uses
                    .extend(leaves.into_iter().map(|leaf| (ctx.clone(), leaf)));
            }
            Tok::Ident(w) if w == "mod" => match (name(&t, i + 1), t.get(i + 2)) {
                (Some(n), Some(Tok::P(';' | '{'))) => {
                    if depth == 0 {
                        src.defs.insert(n.clone());
                    }
                    if t[i + 2] == Tok::P('{') {
                        depth += 1;
                        inline.push((n, depth));
                    } else {
                        src.mods.push(ctx.into_iter().chain([n]).collect());
                    }
                    i += 3;
                }
                _ => i += 1,
            },
            Tok::Ident(w) if depth == 0 && DEFINERS.contains(&w.as_str()) => {
                if let Some(n) = name(&t, i + 1) {
                    src.defs.insert(n);
                }
                i += 1;
            }
            Tok::Ident(w) if i == 0 || t[i - 1] != Tok::Sep => {
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while t.get(j) == Some(&Tok::Sep) {
                    let Some(n) = name(&t, j + 1) else { break };
                    path.push(n);
                    j += 2;
                }
                if path.len() > 1 {
                    src.paths.push((ctx, path));
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    src
}

fn cat(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().chain(b).cloned().collect()
}

/// File → the files it imports, each with the names it takes from it.
pub type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// A crate's module files, by module path, as reached from its root by `mod` declarations.
pub struct Crate {
    pub modules: BTreeMap<Vec<String>, (String, Source)>,
}

impl Crate {
    /// `files`: every source file by its path under the crate's folder (`a/b.rs`); `root`: `lib.rs`
    /// or `main.rs`.
    pub fn new(files: &BTreeMap<String, String>, root: &str) -> Crate {
        let mut modules = BTreeMap::new();
        let mut todo = vec![(Vec::new(), root.to_string())];
        while let Some((m, file)) = todo.pop() {
            let Some(text) = files.get(&file) else {
                continue;
            };
            let src = read(text);
            let dir = if m.is_empty() || file == "mod.rs" || file.ends_with("/mod.rs") {
                file.rsplit_once('/').map_or("", |(d, _)| d).to_string()
            } else {
                file.trim_end_matches(".rs").to_string()
            };
            for decl in &src.mods {
                let sub = decl.join("/");
                let under = |f: String| {
                    if dir.is_empty() {
                        f
                    } else {
                        format!("{dir}/{f}")
                    }
                };
                let found = [under(format!("{sub}.rs")), under(format!("{sub}/mod.rs"))]
                    .into_iter()
                    .find(|f| files.contains_key(f));
                if let Some(f) = found {
                    todo.push((cat(&m, decl), f));
                }
            }
            modules.insert(m, (file, src));
        }
        Crate { modules }
    }

    /// The `use` of module `m` in inline module `ctx` that binds `name`.
    fn binding(&self, m: &[String], ctx: &[String], name: &str) -> Option<&(Vec<String>, Leaf)> {
        self.modules.get(m)?.1.uses.iter().find(|(c, leaf)| {
            !leaf.glob && c.as_slice() == ctx && leaf.bind.as_deref() == Some(name)
        })
    }

    /// `path` as written in module `m` (inline module `ctx`) from the crate's root, if it names
    /// something of this crate.
    fn absolute(
        &self,
        m: &[String],
        ctx: &[String],
        path: &[String],
        hops: usize,
    ) -> Option<Vec<String>> {
        let here = cat(m, ctx);
        let (first, rest) = path.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(cat(&here, rest)),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let base = here.len().checked_sub(ups)?;
                Some(cat(&here[..base], &path[ups..]))
            }
            _ if hops > 8 => None,
            name => {
                if let Some((c, leaf)) = self.binding(m, ctx, name) {
                    let to = self.absolute(m, c, &leaf.path, hops + 1)?;
                    Some(cat(&to, rest))
                } else if self.modules.contains_key(&cat(&here, &path[..1])) {
                    Some(cat(&here, path))
                } else {
                    None
                }
            }
        }
    }

    /// The module whose file defines what `abs` names, following re-exports.
    fn target(&self, abs: &[String], hops: usize) -> Vec<String> {
        let n = (0..=abs.len())
            .rev()
            .find(|&n| self.modules.contains_key(&abs[..n]))
            .unwrap_or(0);
        let m = abs[..n].to_vec();
        let (Some(name), Some((_, src))) = (abs.get(n), self.modules.get(&m)) else {
            return m;
        };
        if hops > 8 || src.defs.contains(name) {
            return m;
        }
        if let Some((c, leaf)) = self.binding(&m, &[], name) {
            return match self.absolute(&m, c, &leaf.path, 0) {
                Some(to) => self.target(&cat(&to, &abs[n + 1..]), hops + 1),
                None => m,
            };
        }
        for (c, leaf) in src.uses.iter().filter(|(c, l)| l.glob && c.is_empty()) {
            let Some(g) = self.absolute(&m, c, &leaf.path, 0) else {
                continue;
            };
            let provides = self.modules.get(&g).is_some_and(|(_, s)| {
                s.defs.contains(name) || self.binding(&g, &[], name).is_some()
            });
            if provides {
                return self.target(&cat(&g, &abs[n..]), hops + 1);
            }
        }
        m
    }

    /// Every file's imports of other files; a file's imports of its own module's ancestors (whose
    /// items a child module may use) are left out.
    pub fn edges(&self) -> Edges {
        let mut edges = Edges::new();
        for (m, (file, src)) in &self.modules {
            let out = edges.entry(file.clone()).or_default();
            let uses = src.uses.iter().map(|(c, leaf)| {
                let shown = match (leaf.glob, leaf.path.last()) {
                    (true, _) => format!("{}::*", leaf.path.join("::")),
                    (false, Some(last)) => last.clone(),
                    (false, None) => String::new(),
                };
                (c, &leaf.path, shown)
            });
            let paths = src.paths.iter().map(|(c, p)| (c, p, p.join("::")));
            for (ctx, path, shown) in uses.chain(paths) {
                let Some(abs) = self.absolute(m, ctx, path, 0) else {
                    continue;
                };
                let to = self.target(&abs, 0);
                if m.starts_with(&to) {
                    continue;
                }
                if let Some((to_file, _)) = self.modules.get(&to) {
                    out.entry(to_file.clone()).or_default().insert(shown);
                }
            }
        }
        edges
    }
}

/// The strongly connected sets of more than one file (Tarjan's algorithm): each a circle of imports.
pub fn circles(edges: &Edges) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let at = self.index.len();
            self.index.insert(v, at);
            self.low.insert(v, at);
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == at {
                let from = self.stack.iter().position(|s| *s == v).unwrap();
                let set: Vec<String> = self.stack.drain(from..).map(String::from).collect();
                if set.len() > 1 {
                    self.out.push(
                        set.into_iter()
                            .collect::<BTreeSet<_>>()
                            .into_iter()
                            .collect(),
                    );
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

/// A circle's files and the imports that tie them, one a line.
pub fn describe(circle: &[String], edges: &Edges) -> String {
    let mut out = format!("{} files: {}", circle.len(), circle.join(", "));
    for from in circle {
        for (to, names) in edges.get(from).into_iter().flatten() {
            if circle.contains(to) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                out += &format!("\n  {from} -> {to}: {}", names.join(", "));
            }
        }
    }
    out
}
