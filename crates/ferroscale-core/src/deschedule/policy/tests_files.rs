//! Upstream's own policy files read unchanged (kubernetes-sigs/descheduler): each file of its
//! `examples/` (under `examples/` here, with its upstream path), and the `strategies: null` its chart's
//! values leave when a user unsets the v1alpha1 default (descheduler issues #1268, #1383).

use super::tests::draft;
use super::Policy;

#[test]
fn a_v1alpha1_file_with_strategies_null_is_accepted_and_deschedules_nothing() {
    let text =
        "apiVersion: \"descheduler/v1alpha1\"\nkind: \"DeschedulerPolicy\"\nstrategies: null\n";
    let (policy, warnings) = Policy::parse(text).unwrap_or_else(|e| panic!("{e}"));
    assert!(policy.profiles.is_empty());
    assert!(!warnings.is_empty(), "says that nothing is descheduled");
    let (_, _) =
        draft("apiVersion: \"descheduler/v1alpha1\"\nkind: \"DeschedulerPolicy\"\nstrategies:\n");
}

#[test]
fn a_v1alpha2_file_with_strategies_null_is_read_as_its_profiles() {
    let text = "apiVersion: \"descheduler/v1alpha2\"\nkind: \"DeschedulerPolicy\"\nstrategies: null\n\
                profiles:\n- name: p\n  plugins:\n    deschedule:\n      enabled: [RemoveFailedPods]\n";
    let (policy, _) = Policy::parse(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(policy.profiles.len(), 1);
}

#[test]
fn a_v1alpha2_file_with_strategies_set_is_refused_naming_the_field() {
    let text = "apiVersion: \"descheduler/v1alpha2\"\nkind: \"DeschedulerPolicy\"\n\
                strategies: {RemoveDuplicates: {enabled: true}}\nprofiles: []\n";
    let e = Policy::parse(text).unwrap_err().to_string();
    assert!(e.contains("strategies"), "{e}");
}
