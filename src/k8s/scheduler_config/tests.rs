use super::*;

fn header() -> &'static str {
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
}

#[test]
fn the_first_profiles_honoured_arguments_are_read() {
    let text = format!(
        "{}profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/aaa]
      ignoredResourceGroups: [example.org]
      scoringStrategy: {{ type: MostAllocated }}
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [ {{ key: zone, operator: In, values: [a] }} ]
- schedulerName: other
  plugins: {{ filter: {{ disabled: [ {{ name: '*' }} ] }} }}
",
        header()
    );
    let p = parse(&text).unwrap();
    assert!(p.ignores("example.com/aaa") && p.ignores("example.org/x"));
    assert!(!p.ignores("example.com/bbb"));
    assert_eq!(p.added_affinity.len(), 1);
    assert_eq!(p.added_affinity[0][0].key, "zone");
}

#[test]
fn no_profile_is_the_default_profile() {
    assert!(parse(header()).unwrap().is_default());
}

#[test]
fn what_is_not_simulated_is_refused_by_its_field() {
    for (body, field) in [
        ("profiles: [ { plugins: { filter: { disabled: [ { name: NodeAffinity } ] } } } ]\n", "profiles[0].plugins"),
        ("profiles: [ { pluginConfig: [ { name: PodTopologySpread, args: { defaultingType: List } } ] } ]\n", "profiles[0].pluginConfig[0].name"),
        ("profiles: [ { pluginConfig: [ { name: NodeAffinity, args: { other: 1 } } ] } ]\n", "profiles[0].pluginConfig[0].args.other"),
        ("extenders: []\n", "extenders"),
    ] {
        let e = parse(&format!("{}{body}", header())).unwrap_err().to_string();
        assert!(e.contains(field), "{e} names {field}");
    }
    let e = parse(
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("apiVersion"), "{e}");
}
