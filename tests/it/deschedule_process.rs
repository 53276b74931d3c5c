//! `ferroscale deschedule` and `run --deschedule-policy` as an operator runs them: a policy file that
//! cannot be used stops the process at start (exit 2) naming the file and the field.

use crate::support::process::run_failing;

#[test]
fn a_bad_policy_file_stops_deschedule_and_run_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, "apiVersion: descheduler/v1alpha2\nkind: Policy\n").unwrap();
    let file = path.to_str().unwrap();
    let (code, err) = run_failing(&["deschedule", "--policy-config-file", file]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(file) && err.contains("kind"), "{err}");
    let (code, err) = run_failing(&["run", "--cloud", "memory", "--deschedule-policy", file]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--deschedule-policy") && err.contains(file) && err.contains("kind"),
        "{err}"
    );
    let (code, err) = run_failing(&["deschedule"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--policy-config-file"), "{err}");
}
