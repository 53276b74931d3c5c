//! Every decoder of input that comes from outside (CA's protobuf bytes, quantities, Go durations, the YAML
//! files, `kubectl` dumps and their storage objects) never panics on arbitrary input (proptest), and the
//! storage dump the properties vary resolves when its values are sound.

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::grpc::convert;
use ferroscale::model::{parse_go_duration, quantity};
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use proptest::prelude::*;
use prost::Message;

proptest! {
    #[test]
    fn protobuf_nodes_and_pods_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(node) = convert::node(Some(&bytes), None, "nodeBytes") {
            let _ = convert::template_from_node(&node, "nodeBytes");
        }
        if let Ok(pod) = convert::pod(&bytes, None, "podBytes") {
            let _ = convert::pod_requests(&pod);
        }
    }

    /// Valid encodings with arbitrary quantities and a byte flipped: closer to what a fuzzer reaches.
    #[test]
    fn mutated_protobuf_pods_never_panic(cpu in ".{0,12}", memory in ".{0,12}", flip in any::<(usize, u8)>()) {
        let q = |v: &str| Quantity { string: Some(v.into()) };
        let pod = core::Pod {
            spec: Some(core::PodSpec {
                containers: vec![core::Container {
                    name: Some("c".into()),
                    resources: Some(core::ResourceRequirements {
                        requests: [("cpu".to_string(), q(&cpu)), ("memory".to_string(), q(&memory))].into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut bytes = pod.encode_to_vec();
        let n = bytes.len();
        bytes[flip.0 % n] ^= flip.1;
        if let Ok(pod) = convert::pod(&bytes, None, "podBytes") {
            let _ = convert::pod_requests(&pod);
        }
    }

    #[test]
    fn quantities_and_durations_never_panic(text in "\\PC{0,24}") {
        let _ = quantity::parse_milli(&text);
        let _ = quantity::parse_cpu_milli(&text);
        let _ = quantity::parse_units(&text);
        let _ = parse_go_duration(&text);
    }

    #[test]
    fn quantity_like_text_never_panics(text in "[-+]?[0-9.]{0,30}([eE][-+]?[0-9]{0,4})?(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?") {
        let _ = quantity::parse_milli(&text);
        let _ = quantity::parse_cpu_milli(&text);
        let _ = parse_go_duration(&text);
    }

    #[test]
    fn yaml_files_never_panic(text in "\\PC{0,200}") {
        let _ = MemoryConfig::parse(&text).map(|c| MemoryCloud::new(&c));
        let _ = ferroscale::engine::expander::Priorities::parse(&text);
        let _ = ferroscale::pricing::PriceOverrides::parse(&text);
        let _ = ferroscale::k8s::documents::parse(&text, "dump.yaml");
    }

    #[test]
    fn json_dumps_never_panic(text in "[{\\[]\\PC{0,200}") {
        let _ = ferroscale::k8s::documents::parse(&text, "dump.json");
    }

    /// JSON shaped like `kubectl get -o json`, with arbitrary scalars where values go.
    #[test]
    fn json_shaped_dumps_never_panic(a in "\\PC{0,12}", b in "[^\"\\\\]{0,12}", n in any::<i64>(), kind in "(Pod|Node|List|PodList|\\PC{0,6})") {
        let a = serde_json::to_string(&a).unwrap();
        let _ = ferroscale::k8s::documents::parse(
            &format!(r#"{{"apiVersion": "v1", "items": [{{"kind": "{kind}", "metadata": {{"name": {a}}}, "spec": {{"containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "{b}"}}}}}}], "priority": {n}}}, "status": {{"phase": {a}}}}}, {n}, {a}], "kind": "{kind}"}}"#),
            "dump.json",
        );
    }

    /// YAML shaped like the files, with arbitrary scalars where values go.
    #[test]
    fn yaml_shaped_files_never_panic(a in "\\PC{0,12}", b in "\\PC{0,12}", n in any::<i64>()) {
        let memory = format!("nodeGroups:\n  - name: {a}\n    minSize: {n}\n    maxSize: {b}\n    capacity: {{cpu: {a}, memory: {b}}}\n");
        let _ = MemoryConfig::parse(&memory).map(|c| MemoryCloud::new(&c));
        let _ = ferroscale::engine::expander::Priorities::parse(&format!("{n}:\n  - '{a}'\n"));
        let _ = ferroscale::pricing::PriceOverrides::parse(&format!("instanceTypes:\n  {a}: {{pricePerHour: {b}}}\nnodeGroups:\n  x: {{discount: {n}}}\n"));
        let _ = ferroscale::k8s::documents::parse(
            &format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {a}}}\nspec: {{containers: [{{name: c, resources: {{requests: {{cpu: {b}}}}}}}]}}\n"),
            "dump.yaml",
        );
    }
}

/// A dump of a pod, two claims, a volume, a class and a CSINode with `a`, `b`, `op` and `count` where
/// names, modes, operators and counts go.
fn storage_dump(a: &str, b: &str, op: &str, count: i32, ephemeral: bool) -> String {
    let volume = if ephemeral {
        format!("{{name: {a}x, ephemeral: {{volumeClaimTemplate: {{spec: {{storageClassName: '{a}'}}}}}}}}")
    } else {
        format!("{{name: v, persistentVolumeClaim: {{claimName: '{a}'}}}}")
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: n}}\nspec: {{containers: [{{name: c}}], volumes: [{volume}]}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: '{a}', namespace: n}}\nspec: {{volumeName: '{b}', storageClassName: '{a}'}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: 'p-{a}x', namespace: n}}\nspec: {{storageClassName: '{a}'}}\n---\n\
         apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: '{b}', labels: {{topology.kubernetes.io/zone: '{b}'}}}}\n\
         spec: {{csi: {{driver: '{a}', volumeHandle: h}}, nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: '{a}', operator: '{op}', values: ['{b}']}}]}}]}}}}}}\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: '{a}'}}\nprovisioner: '{b}'\nvolumeBindingMode: '{b}'\n\
         allowedTopologies: [{{matchLabelExpressions: [{{key: '{a}', values: ['{b}']}}]}}]\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {{name: '{a}'}}\nspec: {{drivers: [{{name: '{b}', nodeID: x, allocatable: {{count: {count}}}}}]}}\n"
    )
}

#[test]
fn the_storage_dump_resolves_when_its_values_are_sound() {
    let objects =
        ferroscale::k8s::documents::parse(&storage_dump("gp3", "pv-1", "In", 25, false), "d")
            .unwrap();
    let storage = objects.storage();
    let claims = storage.claims_of(&objects.pods[0]).unwrap();
    assert!(
        matches!(
            claims[0].state,
            ferroscale::model::volumes::ClaimState::Bound { .. }
        ),
        "{claims:?}"
    );
    assert_eq!(storage.limits_of("gp3").get("pv-1"), Some(&25));
}

proptest! {
    /// Storage objects with arbitrary scalars where names, modes, operators and counts go: resolving a
    /// pod's claims and a node's attach limits never panics, whatever the dump says.
    #[test]
    fn storage_objects_never_panic(
        a in "[a-z0-9./_-]{0,12}",
        b in "\\PC{0,12}",
        op in "(In|NotIn|Exists|Gt|Lt|\\PC{0,4})",
        count in any::<i32>(),
        ephemeral in any::<bool>(),
    ) {
        let dump = storage_dump(&a, &b, &op, count, ephemeral);
        if let Ok(objects) = ferroscale::k8s::documents::parse(&dump, "dump.yaml") {
            let storage = objects.storage();
            for p in &objects.pods {
                let _ = storage.claims_of(p);
            }
            let _ = storage.limits_of(&a);
        }
    }
}
