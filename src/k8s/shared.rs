//! One table of shared label maps and namespace names for every conversion of this process, so that
//! replicas converted apart (each watch event is one pod) still hold one copy between them
//! (`model::shared`). A process-wide table rather than one per caller because the watches convert with
//! free functions, one object at a time; it is swept of copies no pod holds any more as it grows.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use parking_lot::Mutex;

use crate::model::shared::{Interner, Labels, Shared, SharedName};

#[derive(Default)]
struct Tables {
    labels: Interner<BTreeMap<String, String>>,
    names: Interner<String>,
    images: Interner<Vec<String>>,
}

static TABLES: LazyLock<Mutex<Tables>> = LazyLock::new(Default::default);

/// The shared copy of a label map (absent: empty).
pub fn labels(m: Option<&BTreeMap<String, String>>) -> Labels {
    static EMPTY: LazyLock<Labels> = LazyLock::new(Labels::default);
    match m {
        Some(m) if !m.is_empty() => TABLES.lock().labels.intern_ref(m),
        _ => EMPTY.clone(),
    }
}

/// The shared copy of a namespace's name.
pub fn name(s: &str) -> SharedName {
    TABLES.lock().names.intern_ref(s)
}

/// The shared copy of a pod's image list.
pub fn images(v: Vec<String>) -> Shared<Vec<String>> {
    TABLES.lock().images.intern(v)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use crate::model::shared::Shared;

    fn replica(name: &str) -> core::Pod {
        core::Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("shop".into()),
                labels: Some([("app".to_string(), "cart".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn replicas_converted_apart_hold_one_copy_of_their_labels_and_namespace() {
        let a = crate::k8s::objects::pod(&replica("cart-1")).unwrap();
        let b = crate::k8s::objects::pod(&replica("cart-2")).unwrap();
        assert!(Shared::same_copy(&a.labels, &b.labels));
        assert!(Shared::same_copy(&a.namespace, &b.namespace));
        assert_eq!(a.namespace, "shop");
        assert_eq!(a.labels.get("app").map(String::as_str), Some("cart"));
    }
}
