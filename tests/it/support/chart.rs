//! The Helm chart rendered by Helm's own Go SDK (helm-python-sdk from PyPI, `scripts/render_chart.py`;
//! `FERROSCALE_HELM_PYTHON` names its Python, as `scripts/test.sh` sets), its objects parsed as their
//! kinds, and the few of them the chart tests look up by name.

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::Value;

/// The chart's folder.
pub const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/ferroscale");

/// The Python with helm-python-sdk that renders the chart.
pub fn python() -> String {
    std::env::var("FERROSCALE_HELM_PYTHON").expect(
        "FERROSCALE_HELM_PYTHON must name a Python with helm-python-sdk (scripts/test.sh installs it)",
    )
}

/// What `scripts/render_chart.py` prints for the chart with `args` (a values file, `--set K=V`), or Helm's
/// error; `notes`: the rendered NOTES.txt instead of the objects.
fn renderer(notes: bool, args: &[&std::ffi::OsStr]) -> Result<Vec<u8>, String> {
    let mut cmd = Command::new(python());
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/render_chart.py"
    ));
    if notes {
        cmd.arg("--notes");
    }
    let out = cmd
        .arg(CHART)
        .args(args)
        .output()
        .expect("running the chart renderer");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(out.stdout)
}

fn objects(stdout: &[u8]) -> Vec<Value> {
    let docs: Vec<Value> = serde_json::from_slice(stdout).unwrap();
    docs.into_iter().map(|d| d["object"].clone()).collect()
}

/// The rendered objects, or Helm's error.
pub fn render(values: Option<&Path>) -> Result<Vec<Value>, String> {
    let args: Vec<&std::ffi::OsStr> = values.iter().map(|v| v.as_os_str()).collect();
    renderer(false, &args).map(|out| objects(&out))
}

fn set_args<'a>(sets: &'a [&'a str]) -> Vec<&'a std::ffi::OsStr> {
    sets.iter()
        .flat_map(|s| ["--set".as_ref(), s.as_ref()])
        .collect()
}

/// The objects rendered with `--set` each of `sets` over the defaults, or Helm's error.
pub fn render_set(sets: &[&str]) -> Result<Vec<Value>, String> {
    renderer(false, &set_args(sets)).map(|out| objects(&out))
}

/// The NOTES.txt `helm install` would print with `--set` each of `sets`.
pub fn notes(sets: &[&str]) -> String {
    String::from_utf8(renderer(true, &set_args(sets)).unwrap()).unwrap()
}

/// Drops nulls and empty maps/lists, which serializers may or may not write.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalize(v)))
                .filter(|(_, v)| {
                    !(v.is_null()
                        || v == &Value::Object(Default::default())
                        || v == &Value::Array(vec![]))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// Parses `doc` as `T` and checks nothing was lost on the way (an unknown or misplaced field would be).
pub fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let t: T = serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("{} {}: {e}", doc["kind"], doc["metadata"]["name"]));
    let back = serde_json::to_value(&t).unwrap();
    assert_eq!(
        normalize(&back),
        normalize(doc),
        "{} {} has fields its kind does not know",
        doc["kind"],
        doc["metadata"]["name"]
    );
    t
}

/// The release the renderer installs: `fs` in namespace `autoscaling`.
pub const SERVICE: &str = "fs-ferroscale";

/// The one object of `kind` named `name`, parsed as `T`.
pub fn one<T: serde::de::DeserializeOwned + serde::Serialize>(
    objects: &[Value],
    kind: &str,
    name: &str,
) -> T {
    let found: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    typed(found[0])
}

/// How many objects of `kind` the chart rendered.
pub fn count(objects: &[Value], kind: &str) -> usize {
    objects.iter().filter(|o| o["kind"] == kind).count()
}

/// ferroscale's Deployment.
pub fn ferroscale(objects: &[Value]) -> Deployment {
    one(objects, "Deployment", SERVICE)
}

/// cluster-autoscaler's Deployment (provider mode).
pub fn cluster_autoscaler(objects: &[Value]) -> Deployment {
    one(objects, "Deployment", "fs-ferroscale-cluster-autoscaler")
}

/// The objects rendered with `yaml` as the values file, or Helm's error.
pub fn render_yaml(yaml: &str) -> Result<Vec<Value>, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("values.yaml");
    std::fs::write(&path, yaml).unwrap();
    render(Some(&path))
}
