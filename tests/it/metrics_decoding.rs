//! metrics-server's objects (`NodeMetrics`, `PodMetrics`) from a dump or the API never panic the
//! decoder, whatever their quantities, names and shape (proptest), and sound ones give the usage
//! they say.

use ferroscale::k8s::documents;
use ferroscale::k8s::metrics_server::{
    node_sample, pod_usage, MetricsList, NodeMetrics, PodMetrics,
};
use proptest::prelude::*;

/// Text a quantity, a name or a field may hold, YAML-quoted.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

proptest! {
    #[test]
    fn dumped_metrics_never_panic(
        name in "\\PC{0,12}",
        cpu in "[-+]?[0-9.]{0,20}([eE][-+]?[0-9]{0,3})?(n|u|m|k|M|G|Ki|Mi|Gi|Ei)?|\\PC{0,10}",
        memory in "\\PC{0,16}",
        containers in 0usize..4,
        drop_memory in any::<bool>(),
    ) {
        let usage = |with_memory: bool| if with_memory {
            format!("{{cpu: {}, memory: {}}}", quoted(&cpu), quoted(&memory))
        } else {
            format!("{{cpu: {}}}", quoted(&cpu))
        };
        let mut doc = format!(
            "apiVersion: metrics.k8s.io/v1beta1\nkind: NodeMetrics\nmetadata: {{name: {}}}\nusage: {}\n---\n\
             apiVersion: metrics.k8s.io/v1beta1\nkind: PodMetrics\nmetadata: {{name: {}, namespace: d}}\ncontainers:\n",
            quoted(&name), usage(true), quoted(&name)
        );
        for i in 0..containers {
            doc.push_str(&format!("- {{name: c{i}, usage: {}}}\n", usage(!(drop_memory && i == 0))));
        }
        if let Ok(objects) = documents::parse(&doc, "dump.yaml") {
            let _ = objects.inputs();
        }
        let _ = documents::inputs(&doc, "dump.yaml");
    }

    #[test]
    fn api_answers_never_panic(text in "\\PC{0,200}", cpu in "\\PC{0,12}") {
        if let Ok(l) = serde_json::from_str::<MetricsList<NodeMetrics>>(&text) {
            for n in &l.items {
                let _ = node_sample(n);
            }
        }
        if let Ok(l) = serde_json::from_str::<MetricsList<PodMetrics>>(&text) {
            for p in &l.items {
                let _ = pod_usage(p);
            }
        }
        let shaped = format!(
            r#"{{"items":[{{"metadata":{{"name":"n"}},"usage":{{"cpu":{c}}}}}]}}"#,
            c = quoted(&cpu)
        );
        if let Ok(l) = serde_json::from_str::<MetricsList<NodeMetrics>>(&shaped) {
            let _ = node_sample(&l.items[0]);
        }
        let shaped = format!(
            r#"{{"items":[{{"metadata":{{"name":"p"}},"containers":[{{"name":"c","usage":{{"cpu":{c},"memory":{c}}}}}]}}]}}"#,
            c = quoted(&cpu)
        );
        if let Ok(l) = serde_json::from_str::<MetricsList<PodMetrics>>(&shaped) {
            let _ = pod_usage(&l.items[0]);
        }
    }
}

#[test]
fn a_dumps_metrics_give_the_usage_they_say() {
    let doc = "apiVersion: metrics.k8s.io/v1beta1\nkind: NodeMetricsList\nitems:\n\
               - {kind: NodeMetrics, metadata: {name: n1}, usage: {cpu: 1500m, memory: 2Gi}}\n---\n\
               apiVersion: metrics.k8s.io/v1beta1\nkind: PodMetrics\nmetadata: {name: p, namespace: d}\n\
               containers: [{name: a, usage: {cpu: 100m, memory: 1Mi}}, {name: b, usage: {cpu: 50m, memory: 1Mi}}]\n";
    let usage = documents::parse(doc, "dump.yaml")
        .unwrap()
        .inputs()
        .unwrap()
        .usage
        .unwrap();
    let n1 = usage.nodes["n1"];
    assert_eq!((n1.cpu_milli, n1.memory), (1500, 2 << 30));
    let p = usage.pods["d/p"].unwrap();
    assert_eq!((p.cpu_milli, p.memory), (150, 2 << 20));
    let e = documents::parse(
        "apiVersion: metrics.k8s.io/v1beta1\nkind: NodeMetrics\nmetadata: {name: n1}\nusage: {cpu: lots}\n",
        "dump.yaml",
    )
    .unwrap()
    .inputs()
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("NodeMetrics n1") && e.contains("usage.cpu"),
        "{e}"
    );
}
