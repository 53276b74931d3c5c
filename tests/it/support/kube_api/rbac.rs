//! Which RBAC permission each request the server saw needs, checked against `k8s::PERMISSIONS`.

use super::wire::parse_path;
use super::KubeApi;

/// (API group, resource, verb) of a recorded request, as RBAC names it.
pub fn permission_of(request: &str) -> (String, String, String) {
    let (method, uri) = request.split_once(' ').unwrap();
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let t = parse_path(path).unwrap();
    let group = t
        .collection
        .strip_prefix("/apis/")
        .map(|r| r.split('/').next().unwrap().to_string())
        .unwrap_or_default();
    let resource = t.collection.rsplit('/').next().unwrap().to_string();
    let resource = match &t.sub {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource,
    };
    let verb = match (method, t.name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if query.contains("watch=true") => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => "unknown",
    };
    (group, resource, verb.to_string())
}

/// Asserts every request made is one `ferroscale::k8s::PERMISSIONS` lists (so the chart's RBAC covers it).
pub fn assert_permitted(api: &KubeApi) {
    assert_permitted_by(api, ferroscale::k8s::PERMISSIONS, "k8s::PERMISSIONS");
}

/// Asserts every request made is one of `permissions` (`list`, their name, for the message).
pub fn assert_permitted_by(api: &KubeApi, permissions: &[(&str, &str, &str)], list: &str) {
    for r in api.requests() {
        let (g, res, verb) = permission_of(&r);
        assert!(
            permissions.contains(&(g.as_str(), res.as_str(), verb.as_str())),
            "{r} needs ({g:?}, {res}, {verb}), which {list} (and the chart's RBAC) lacks"
        );
    }
}
