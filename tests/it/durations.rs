//! Durations as Go parses them, through the binary: a flag, a `--config` key, a groups file's field
//! or a descheduler policy's field past Go's `time.ParseDuration` range (or negative) stops the
//! command with code 2 naming it, where the longest Go duration (2562047h47m16.854775807s) is
//! accepted; integer seconds likewise stop at Go's range.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::simulate_durations::{HUGE, LONGEST};
use crate::support::fixtures::dump::{node, GROUPS};
use crate::support::process::{run_failing, BIN};

/// A cluster of one node and the groups file beside it, in `dir`.
fn inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let cluster = dir.join("cluster.yaml");
    std::fs::write(&cluster, node("a", "small", "2", "8Gi")).unwrap();
    let groups = dir.join("groups.yaml");
    std::fs::write(&groups, GROUPS).unwrap();
    (cluster, groups)
}

/// `simulate` on `cluster` and `groups` with `args`: (exit code, stderr).
fn simulate(cluster: &Path, groups: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["simulate", "--cluster"])
        .arg(cluster)
        .arg("--node-groups")
        .arg(groups)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_duration_flag_past_gos_range_exits_2_naming_the_flag_and_the_longest_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, groups) = inputs(dir.path());
    for flag in [
        "--max-node-provision-time",
        "--deschedule-cooldown",
        "--node-max-lifetime",
        "--scale-down-unneeded-time",
    ] {
        for bad in [HUGE, "2562047h47m16.854775808s", "-5s"] {
            // `--flag=-5s`: the value is not taken for a flag.
            let (code, err) = simulate(&cluster, &groups, &[&format!("{flag}={bad}")]);
            assert_eq!(code, 2, "{flag} {bad}: {err}");
            assert!(
                err.contains(flag) && err.contains(bad),
                "{flag} {bad}: {err}"
            );
            assert!(!err.contains("panicked"), "{flag} {bad}: {err}");
        }
        let (code, err) = simulate(&cluster, &groups, &[flag, LONGEST]);
        assert_eq!(code, 0, "{flag} {LONGEST}: {err}");
    }
    let (code, err) = run_failing(&["deschedule", "--deschedule-cooldown", HUGE]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--deschedule-cooldown"), "{err}");
}

#[test]
fn integer_seconds_past_gos_range_exit_2_naming_the_flag() {
    for bad in ["9223372036854775807", "9223372037"] {
        let (code, err) = run_failing(&["run", "--max-graceful-termination-sec", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains("--max-graceful-termination-sec"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn a_config_files_duration_past_gos_range_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, groups) = inputs(dir.path());
    let config = dir.path().join("simulate.yaml");
    let with = |value: &str| {
        std::fs::write(
            &config,
            format!(
                "cluster: {}\nnodeGroups: {}\nmaxNodeProvisionTime: {value}\n",
                cluster.display(),
                groups.display()
            ),
        )
        .unwrap();
        run_failing(&["simulate", "--config", config.to_str().unwrap()])
    };
    let (code, err) = with(HUGE);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("maxNodeProvisionTime"), "{err}");
    assert!(err.contains(HUGE), "{err}");
    let (code, err) = with(LONGEST);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_groups_file_with_a_huge_duration_stops_serve_and_simulate_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, _) = inputs(dir.path());
    let groups = dir.path().join("lifetime.yaml");
    let with = |value: &str| {
        let text = GROUPS.replacen(
            "pricePerHour: 0.096,",
            &format!("pricePerHour: 0.096, options: {{maxNodeLifetime: {value}}},"),
            1,
        );
        assert_ne!(text, GROUPS);
        std::fs::write(&groups, text).unwrap();
    };
    with(HUGE);
    let field = "nodeGroups[0] (small).options.maxNodeLifetime";
    let (code, err) = run_failing(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--http-listen",
        "127.0.0.1:0",
        "--memory-config",
        groups.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(field) && err.contains(HUGE), "{err}");
    let (code, err) = simulate(&cluster, &groups, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(field), "{err}");
    with(LONGEST);
    let (code, err) = simulate(&cluster, &groups, &["--loops", "3"]);
    assert_eq!(code, 0, "{err}");
    with("0s");
    let (code, err) = simulate(&cluster, &groups, &["--loops", "3"]);
    assert_eq!(code, 0, "{err}");
}

/// A policy whose `DefaultEvictor` and `PodLifeTime` take `evictor` and `lifetime` as args.
fn policy(evictor: &str, lifetime: &str) -> String {
    format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  \
         pluginConfig:\n  - name: DefaultEvictor\n    args: {evictor}\n  \
         - name: PodLifeTime\n    args: {lifetime}\n  \
         plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n"
    )
}

#[test]
fn a_policy_files_duration_past_gos_range_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, groups) = inputs(dir.path());
    let file = dir.path().join("policy.yaml");
    let run = |evictor: &str, lifetime: &str| {
        std::fs::write(&file, policy(evictor, lifetime)).unwrap();
        simulate(
            &cluster,
            &groups,
            &["--deschedule-policy", file.to_str().unwrap()],
        )
    };
    let hour = "{maxPodLifeTimeSeconds: 3600}";
    for bad in [HUGE, "2562047h47m16.854775808s", "-1m"] {
        let (code, err) = run(&format!("{{minPodAge: \"{bad}\"}}"), hour);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains("minPodAge") && err.contains(bad),
            "{bad}: {err}"
        );
    }
    let (code, err) = run(&format!("{{minPodAge: \"{LONGEST}\"}}"), hour);
    assert_eq!(code, 0, "{err}");
    // Integer seconds: refused past their range naming the field, never wrapped.
    let (code, err) = run("{}", "{maxPodLifeTimeSeconds: 10000000000000000000}");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("maxPodLifeTimeSeconds"), "{err}");
    let (code, err) = run("{}", "{maxPodLifeTimeSeconds: 4294967295}");
    assert_eq!(code, 0, "{err}");
}
