//! Cluster dumps in JSON (`kubectl get … -o json`): read into the same objects as the YAML they stand for,
//! the binary printing the same reports, and bad items refused naming the document, the item, the
//! object and the field.

use ferroscale::k8s::documents;

/// The shipped example as `kubectl get -o json` writes it (four-space indent, `kind` after `items`).
fn example_json() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let yaml = std::fs::read_to_string(format!("{root}/examples/cluster.yaml")).unwrap();
    let value: serde_json::Value = serde_norway::from_str(&yaml).unwrap();
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b"    "),
    );
    serde::Serialize::serialize(&value, &mut ser).unwrap();
    String::from_utf8(out).unwrap()
}

fn err(text: &str) -> String {
    documents::parse(text, "c.json").unwrap_err().to_string()
}

#[test]
fn a_json_list_reads_as_its_yaml() {
    let root = env!("CARGO_MANIFEST_DIR");
    let yaml = std::fs::read_to_string(format!("{root}/examples/cluster.yaml")).unwrap();
    let json = example_json();
    assert!(json.find("\"items\"").unwrap() < json.find("\"kind\": \"List\"").unwrap());
    let a = documents::parse(&yaml, "c.yaml").unwrap();
    let b = documents::parse(&json, "c.json").unwrap();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert!(!b.nodes.is_empty() && !b.pods.is_empty() && !b.pdbs.is_empty());
    // Concatenated values are documents; null documents and items are skipped as in YAML.
    let two = r#"{"kind": "Node", "metadata": {"name": "a"}}
        null
        {"kind": "NodeList", "items": null, "metadata": {}}
        {"items": [{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}}], "kind": "List"}"#;
    let o = documents::parse(two, "c.json").unwrap();
    assert_eq!((o.nodes.len(), o.pods.len()), (1, 1));
    assert_eq!(o.pods[0].metadata.name.as_deref(), Some("p"));
    // YAML in flow style is still YAML.
    let flow = documents::parse("{kind: Node, metadata: {name: n}}\n", "c.yaml").unwrap();
    assert_eq!(flow.nodes[0].metadata.name.as_deref(), Some("n"));
}

#[test]
fn bad_json_items_are_named() {
    let list = |items: &str| {
        format!("{{\"apiVersion\": \"v1\", \"items\": [{items}], \"kind\": \"List\"}}")
    };
    let node = r#"{"kind": "Node", "metadata": {"name": "n"}}"#;
    // An unknown kind.
    let e = err(&list(&format!(
        r#"{node}, {{"kind": "Service", "metadata": {{"name": "web"}}}}"#
    )));
    assert!(
        e.contains(
            "c.json: document 1 (List ) items[1] (Service web): unsupported kind \"Service\""
        ),
        "{e}"
    );
    // A broken field: the item, its kind and name, and the field.
    let e = err(&list(&format!(
        r#"{node}, {node}, {{"kind": "Pod", "metadata": {{"name": "api-0"}}, "spec": {{"containers": 3}}}}"#
    )));
    assert!(
        e.contains("c.json: document 1 (List ) items[2] (Pod api-0): spec.containers: invalid type: integer `3`"),
        "{e}"
    );
    let e = err(&list(
        r#"{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": [1]}}}]}}"#,
    ));
    assert!(
        e.contains("items[0] (Pod p): spec.containers[0].resources.requests.cpu: invalid type"),
        "{e}"
    );
    // Items that are no objects, or have no kind.
    for bad in ["3", "[]", r#"{"metadata": {"name": "x"}}"#, "null"] {
        let e = err(&list(&format!("{node}, {bad}")));
        assert!(
            e.contains("c.json: document 1 (List ) items[1]: no kind"),
            "{bad}: {e}"
        );
    }
    let e = err(&list(r#"{"kind": 3}"#));
    assert!(e.contains("items[0]: invalid type: integer `3`"), "{e}");
    // Items that are no list.
    let e = err(r#"{"kind": "List", "items": {"a": 1}}"#);
    assert!(
        e.contains("c.json: document 1 (List ): items is not a list"),
        "{e}"
    );
    // Broken JSON names the document, line and column.
    let e = err(&format!("{node}\n{{\"kind\": \"Pod\",, }}"));
    assert!(
        e.contains("c.json: document 2: ") && e.contains("line 2"),
        "{e}"
    );
    // A top-level object's field.
    let e = err(r#"{"kind": "Node", "metadata": {"name": "n", "labels": []}}"#);
    assert!(
        e.contains("c.json: document 1 (Node n): metadata.labels: invalid type: sequence"),
        "{e}"
    );
}

#[test]
fn yaml_errors_name_the_field_too() {
    let e = err("kind: List\nitems:\n  - kind: Pod\n    metadata: {name: api-0}\n    spec: {containers: 3}\n");
    assert!(
        e.contains("c.json: document 1 (List ) items[0] (Pod api-0): spec.containers: invalid type: integer `3`"),
        "{e}"
    );
}

#[test]
fn the_binary_prints_the_same_for_json() {
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cluster.json");
    std::fs::write(&json, example_json()).unwrap();
    let run = |cluster: &std::path::Path| {
        let out = std::process::Command::new(crate::support::process::BIN)
            .args(["simulate", "--loops", "3"])
            .arg("--cluster")
            .arg(cluster)
            .args(["--node-groups", &format!("{root}/examples/groups.yaml")])
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let yaml = run(std::path::Path::new(&format!(
        "{root}/examples/cluster.yaml"
    )));
    assert_eq!(
        String::from_utf8(run(&json)).unwrap(),
        String::from_utf8(yaml).unwrap()
    );
}

/// What `simulate --cluster` runs on, converted while the dump is read, is what the objects read whole
/// convert to: claims (owned or not), attach limits, owners' replicas and namespaces' labels resolved after
/// the read, terminal pods left out; in YAML and in JSON.
#[test]
fn converting_while_reading_gives_the_model_of_the_whole_dump() {
    let yaml = r#"
kind: List
items:
- {kind: Namespace, metadata: {name: team, labels: {tier: gold}}}
- kind: Node
  metadata: {name: n1, labels: {zone: a}}
  status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
- kind: CSINode
  metadata: {name: n1}
  spec: {drivers: [{name: ebs.csi.aws.com, nodeID: n1, allocatable: {count: 25}}]}
- kind: Pod
  metadata:
    name: web-1
    namespace: team
    uid: u1
    labels: {app: web}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: r1, controller: true}]
  spec:
    containers: [{name: c, resources: {requests: {cpu: 100m}}}]
    volumes:
    - {name: data, persistentVolumeClaim: {claimName: data}}
    - {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}
    - {name: tmp, emptyDir: {}}
- kind: Pod
  metadata: {name: done, namespace: team}
  spec: {containers: [{name: c}]}
  status: {phase: Succeeded}
- kind: PersistentVolumeClaim
  metadata: {name: data, namespace: team}
  spec: {accessModes: [ReadWriteOncePod], storageClassName: gp3}
- kind: PersistentVolumeClaim
  metadata: {name: web-1-scratch, namespace: team}
  spec: {accessModes: [ReadWriteOnce], storageClassName: gp3}
- kind: StorageClass
  metadata: {name: gp3}
  provisioner: ebs.csi.aws.com
  volumeBindingMode: WaitForFirstConsumer
- kind: ReplicaSet
  metadata: {name: web, namespace: team}
  spec: {replicas: 3, selector: {matchLabels: {app: web}}}
- kind: PodDisruptionBudget
  metadata: {name: web, namespace: team}
  spec: {selector: {matchLabels: {app: web}}}
  status: {disruptionsAllowed: 1, currentHealthy: 1, desiredHealthy: 0, expectedPods: 1}
- kind: DaemonSet
  metadata: {name: agent, namespace: kube-system}
  spec:
    selector: {matchLabels: {app: agent}}
    template:
      metadata: {labels: {app: agent}}
      spec: {containers: [{name: a, resources: {requests: {cpu: 50m}}}]}
"#;
    let value: serde_json::Value = serde_norway::from_str(yaml).unwrap();
    let json = serde_json::to_string_pretty(&value).unwrap();
    for (text, source) in [(yaml, "c.yaml"), (json.as_str(), "c.json")] {
        let whole = documents::parse(text, source).unwrap().inputs().unwrap();
        let read = documents::inputs(text, source).unwrap();
        assert_eq!(format!("{read:?}"), format!("{whole:?}"));
        let pod = &read.pods[0];
        assert_eq!(read.pods.len(), 1, "the terminal pod is left out");
        assert_eq!(pod.claims.len(), 2);
        assert!(pod.claims[0].exclusive);
        // The claims' classes, and which is a generic ephemeral volume's (no PVC to the evictor).
        assert_eq!(pod.claims[0].class.as_deref(), Some("gp3"));
        assert_eq!(
            (pod.claims[0].ephemeral, pod.claims[1].ephemeral),
            (false, true)
        );
        // Requests without limits; no spec.priority.
        assert_eq!(
            pod.meta.qos,
            Some(ferroscale::model::workload::Qos::Burstable)
        );
        assert!(pod.meta.no_priority);
        assert_eq!(pod.meta.owner_replicas, Some(3));
        assert_eq!(
            pod.namespace_labels.get("tier").map(String::as_str),
            Some("gold")
        );
        assert_eq!(
            read.nodes[0].volume_limits.get("ebs.csi.aws.com"),
            Some(&25)
        );
        assert_eq!((read.pdbs.len(), read.daemon_pods.len()), (1, 1));
    }
    // A bad quantity still names the object and the field.
    let bad = yaml.replace("cpu: 100m", "cpu: lots");
    let e = documents::inputs(&bad, "c.yaml").unwrap_err().to_string();
    assert!(e.contains("web-1") && e.contains("cpu"), "{e}");
}
