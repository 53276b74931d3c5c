//! `ferroscale simulate` as users run it: the binary on the shipped example, byte for byte, and bad input
//! refused naming the document and field.

use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::k8s::documents;
use ferroscale::pricing::PriceOverrides;
use ferroscale::simulate::Simulation;

use crate::support::fixtures::dump::{node, pod, GROUPS};

#[test]
fn bad_input_names_the_document_and_field() {
    let e = documents::parse("kind: Service\nmetadata: {name: web}\n", "c.yaml").unwrap_err();
    assert!(
        e.to_string()
            .contains("c.yaml: document 1 (Service web): unsupported kind"),
        "{e}"
    );
    let e = documents::parse(
        "kind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n",
        "c.yaml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("c.yaml: document 1 (Pod p)"), "{e}");
    let refused = |cluster: &str| {
        let objects = documents::parse(cluster, "c.yaml").unwrap();
        Simulation::new(
            &objects,
            &MemoryConfig::parse(GROUPS).unwrap(),
            &PriceOverrides::default(),
        )
        .err()
        .unwrap()
        .to_string()
    };
    let e = refused(&node("n", "nope", "2", "8Gi"));
    assert!(e.contains("ferroscale.io/node-group=nope"), "{e}");
    let e = refused(&pod("a", "p", "lots", "1Gi", None, ""));
    assert!(
        e.contains("pod a/p: spec.containers[0].resources.requests.cpu"),
        "{e}"
    );
}

#[test]
fn the_binary_runs_the_shipped_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new(crate::support::process::BIN)
        .args(["simulate", "--loops", "2"])
        .arg("--cluster")
        .arg(format!("{root}/examples/cluster.yaml"))
        .arg("--node-groups")
        .arg(format!("{root}/examples/groups.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["loop"], 1);
    let groups: Vec<&str> = lines[0]["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["group"].as_str().unwrap())
        .collect();
    assert_eq!(groups, vec!["general-a", "gpu"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("loop 1 at +0s"));
    let (code, err) = crate::support::process::run_failing(&[
        "simulate",
        "--cluster",
        "/nonexistent.yaml",
        "--node-groups",
        "x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cluster /nonexistent.yaml"), "{err}");
}

#[test]
fn the_shipped_example_prints_what_it_always_printed() {
    let root = env!("CARGO_MANIFEST_DIR");
    // Nodes Ready as they join, as before `--node-ready-delay`; `example-booting` has the default (30s).
    let cases: [(&str, &[&str]); 3] = [
        ("example", &["--loops", "3", "--node-ready-delay", "0s"]),
        ("example-booting", &["--loops", "8"]),
        (
            "example-price",
            &[
                "--node-ready-delay",
                "0s",
                "--loops",
                "40",
                "--scale-down-unneeded-time",
                "1m",
                "--scale-down-delay-after-add",
                "0s",
                "--provision-delay",
                "30s",
                "--expander",
                "price",
                "--scale-down-utilization-threshold",
                "0.9",
            ],
        ),
    ];
    for (name, args) in cases {
        let out = std::process::Command::new(crate::support::process::BIN)
            .arg("simulate")
            .args(["--cluster", &format!("{root}/examples/cluster.yaml")])
            .args(["--node-groups", &format!("{root}/examples/groups.yaml")])
            .args(args)
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
        let golden = |ext: &str| {
            std::fs::read_to_string(format!("{root}/tests/it/golden/{name}.{ext}")).unwrap()
        };
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            golden("jsonl"),
            "{name} stdout"
        );
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            golden("log"),
            "{name} stderr"
        );
    }
}
