//! The README is a front door to `docs/`: every relative link in the README, CONTRIBUTING, the chart's README
//! and `docs/**/*.md` leads to a file that exists, and every `#anchor` on a link to a markdown file names a
//! heading there, as GitHub renders it. Markdown is read with pulldown-cmark (CommonMark, tables on), so
//! links in tables and reference-style links count and code spans and blocks do not.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The project's markdown a reader follows links in: the READMEs, CONTRIBUTING and everything under `docs/`.
pub fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    let mut files: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "charts/ferroscale/README.md",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    let mut docs: Vec<PathBuf> = walkdir::WalkDir::new(root.join("docs"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(text, Options::ENABLE_TABLES)
}

/// GitHub's heading id: lowercase, spaces to `-`, every other character but letters, digits, `-` and `_`
/// dropped (github-slugger's rule, on the heading's text with code spans' contents and markup removed).
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The ids of a markdown file's headings; a repeated heading gets `-1`, `-2`, ... as on GitHub.
fn anchors(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut heading: Option<String> = None;
    for event in parser(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut id = base.clone();
                let mut n = 0;
                while !out.insert(id.clone()) {
                    n += 1;
                    id = format!("{base}-{n}");
                }
            }
            _ => {}
        }
    }
    out
}

/// Each link's and image's destination, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    parser(text)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                let line = text[..range.start].matches('\n').count() + 1;
                Some((line, dest_url.into_string()))
            }
            _ => None,
        })
        .collect()
}

/// What is wrong with `file`'s relative links, one message each (empty: nothing). `root` is where a link
/// starting with `/` starts, as GitHub resolves it in a repository.
fn broken_links(file: &Path, root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let shown = file.strip_prefix(root).unwrap_or(file).display();
    let mut out = Vec::new();
    for (line, dest) in links(&text) {
        if dest.contains("://") || dest.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match dest.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (dest.as_str(), None),
        };
        let target = if path.is_empty() {
            file.to_path_buf()
        } else if let Some(from_root) = path.strip_prefix('/') {
            root.join(from_root)
        } else {
            file.parent().unwrap().join(path)
        };
        if !target.exists() {
            out.push(format!(
                "{shown}:{line}: {dest}: no file {}",
                target.display()
            ));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if target.extension().is_some_and(|e| e == "md") {
            let headings = anchors(&std::fs::read_to_string(&target).unwrap());
            if !headings.contains(anchor) {
                let mut known: Vec<_> = headings.into_iter().collect();
                known.sort();
                out.push(format!(
                    "{shown}:{line}: {dest}: no heading #{anchor} (headings: {known:?})"
                ));
            }
        }
    }
    out
}

#[test]
fn docs_links_lead_to_files_and_headings_that_exist() {
    let root = Path::new(ROOT);
    let files = markdown_files();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("docs/reference/metrics.md")),
        "docs/ is walked: {files:?}"
    );
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in &files {
        checked += links(&std::fs::read_to_string(file).unwrap()).len();
        broken.extend(broken_links(file, root));
    }
    assert!(checked > 50, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn docs_links_a_missing_file_or_heading_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("docs/page.md"),
        "# A page\n\n## `ferroscale run`: the loop\n\n## Coming from upstream's chart\n\n## Notes\n\n## Notes\n",
    )
    .unwrap();
    let readme = dir.path().join("README.md");
    std::fs::write(
        &readme,
        "# Front\n\n[ok](docs/page.md#ferroscale-run-the-loop), [ok](docs/page.md#coming-from-upstreams-chart), \
         [ok](docs/page.md#notes-1), [ok](#front), [ok](/docs/page.md), [web](https://example.com/x.md#nope)\n\n\
         | a | b |\n|---|---|\n| [gone](docs/gone.md) | x |\n\n\
         [bad anchor](docs/page.md#the-loop) and `[in code](docs/code.md)`\n\n\
         ![image](docs/missing.png) [self][ref]\n\n[ref]: #nowhere\n",
    )
    .unwrap();
    let broken = broken_links(&readme, dir.path());
    let wrong: Vec<&str> = broken
        .iter()
        .map(|m| m.split(": ").nth(1).unwrap())
        .collect();
    assert_eq!(
        wrong,
        [
            "docs/gone.md",
            "docs/page.md#the-loop",
            "docs/missing.png",
            "#nowhere"
        ],
        "{broken:#?}"
    );
    assert!(broken[0].starts_with("README.md:7: "), "{broken:?}");
}

#[test]
fn docs_links_heading_ids_follow_githubs_rules() {
    assert_eq!(
        slug("`ferroscale run`: the standalone autoscaler"),
        "ferroscale-run-the-standalone-autoscaler"
    );
    assert_eq!(slug("AWS mode (--cloud aws)"), "aws-mode---cloud-aws");
    assert_eq!(
        slug("Coming from upstream's cluster-autoscaler chart"),
        "coming-from-upstreams-cluster-autoscaler-chart"
    );
    assert_eq!(slug("snake_case & Ünïcode 2.0"), "snake_case--ünïcode-20");
    let ids = anchors("# Top\n\n## Set-up\n\nSet-up\n---\n\n## *Tags*, `labels`\n");
    let mut ids: Vec<_> = ids.into_iter().collect();
    ids.sort();
    assert_eq!(ids, ["set-up", "set-up-1", "tags-labels", "top"]);
}
