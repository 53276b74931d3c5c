//! The HTML report folds the nodes kept into one row per reason, with their count, the list (each
//! node with its reason and figures) behind a click: a `<details>` element, closed until opened, as
//! headless Chromium draws it. Beside it, stdout's JSON still lists every node.

use crate::simulate_report::{json_lines, ok, screenshot, simulate};

/// Six opted-in nodes ($1/h), each with one 9-core replica that fits on no other, and no cheaper
/// group: each is kept, "no cheaper placement", with what the cheapest placement would cost.
const GROUPS: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 10, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 1.0,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: i-0}, {id: i-1}, {id: i-2}, {id: i-3}, {id: i-4}, {id: i-5}]}
"#;

fn cluster() -> String {
    (0..6)
        .map(|k| {
            format!(
                "apiVersion: v1\nkind: Node\nmetadata:\n  name: a-{k}\n  labels: {{ferroscale.io/node-group: a, kubernetes.io/hostname: a-{k}}}\n\
                 spec: {{providerID: \"memory:///a/i-{k}\"}}\n\
                 status:\n  allocatable: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n\
                 ---\n\
                 apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{k}, namespace: shop, ownerReferences: \
                 [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}}]}}\n\
                 spec: {{nodeName: a-{k}, containers: [{{name: c, resources: {{requests: {{cpu: \"9\", memory: 1Gi}}}}}}]}}\n\
                 status: {{phase: Running}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Inked (not white) pixels of a screenshot.
fn ink(pixels: &[[u8; 3]]) -> usize {
    pixels.iter().filter(|p| **p != [255, 255, 255]).count()
}

#[test]
fn kept_nodes_fold_into_one_row_per_reason_with_the_list_behind_a_click() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = (dir.path().join("c.yaml"), dir.path().join("g.yaml"));
    std::fs::write(&c, cluster()).unwrap();
    std::fs::write(&g, GROUPS).unwrap();
    let report = dir.path().join("report.html");
    let out = ok(&simulate(
        &c,
        &g,
        &["--loops", "2", "--report", report.to_str().unwrap()],
    ));
    // stdout lists every node with its figures.
    let first = &json_lines(&out)[0];
    let declined = first["consolidationDeclined"].as_array().unwrap();
    assert_eq!(declined.len(), 6, "{first:#}");
    assert_eq!(
        declined[0]["reason"],
        "no cheaper placement: 1 new node(s) of group a would cost $1.0000/h, not less than its $1.0000/h"
    );
    // The page: one row for the six, the list folded.
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        html.matches("<details><summary>nothing_cheaper: 6 nodes</summary><ul>")
            .count(),
        1,
        "{html}"
    );
    for k in 0..6 {
        assert!(
            html.contains(&format!("<li>a-{k}: no cheaper placement: ")),
            "a-{k}"
        );
    }
    assert!(
        !html.contains("<td>not consolidated</td><td>a-0</td>"),
        "{html}"
    );

    // Chromium draws the fold closed, and the list once it is open: the same page with the charts
    // left out (so the table is in view), closed and opened.
    let mut page = html.clone();
    while let (Some(a), Some(b)) = (page.find("<figure"), page.find("</figure>")) {
        page.replace_range(a..b + "</figure>".len(), "");
    }
    let closed = dir.path().join("closed.html");
    let open = dir.path().join("open.html");
    std::fs::write(&closed, &page).unwrap();
    std::fs::write(&open, page.replace("<details>", "<details open>")).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let shut = ink(&screenshot(&closed, &a));
    let opened = ink(&screenshot(&open, &b));
    assert!(shut > 1000, "the closed fold draws its row ({shut} pixels)");
    assert!(
        opened > shut + 1000,
        "opened, the fold shows its six nodes: {opened} inked pixels, {shut} closed"
    );
}
