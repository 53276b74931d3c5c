//! One set of tables of shared pod values (labels, names, images, owners, tolerations, container
//! states) for every conversion of this process, so that
//! replicas converted apart (each watch event is one pod) still hold one copy between them
//! (`model::shared`). A process-wide table rather than one per caller because the watches convert with
//! free functions, one object at a time; it is swept of copies no pod holds any more as it grows.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use parking_lot::{Mutex, MutexGuard};

use crate::model::shared::{Interner, Labels, Shared, SharedName};
use crate::model::workload::{ContainerState, Owner, Toleration};

/// The process's tables of shared copies; a conversion takes them once per pod ([`tables`]).
#[derive(Default)]
pub struct Tables {
    labels: Interner<BTreeMap<String, String>>,
    names: Interner<String>,
    images: Interner<Vec<String>>,
    owners: Interner<Vec<Owner>>,
    states: Interner<Vec<ContainerState>>,
    tolerations: Interner<Vec<Toleration>>,
}

static TABLES: LazyLock<Mutex<Tables>> = LazyLock::new(Default::default);

/// The tables, locked: one lock for all of a pod's shared values rather than one per value (the lock is
/// not reentrant: take it once per pod).
pub fn tables() -> MutexGuard<'static, Tables> {
    TABLES.lock()
}

impl Tables {
    /// The shared copy of a label map (absent: empty).
    pub fn labels(&mut self, m: Option<&BTreeMap<String, String>>) -> Labels {
        static EMPTY: LazyLock<Labels> = LazyLock::new(Labels::default);
        match m {
            Some(m) if !m.is_empty() => self.labels.intern_ref(m),
            _ => EMPTY.clone(),
        }
    }

    /// The shared copy of a name (a namespace, an owner's kind or name, a reason).
    pub fn name(&mut self, s: &str) -> SharedName {
        self.names.intern_ref(s)
    }

    /// The shared copy of a pod's image list.
    pub fn images(&mut self, v: Vec<String>) -> Shared<Vec<String>> {
        self.images.intern(v)
    }

    /// The shared copy of a pod's owner references.
    pub fn owners(&mut self, v: Vec<Owner>) -> Shared<Vec<Owner>> {
        self.owners.intern(v)
    }

    /// The shared copy of a pod's tolerations.
    pub fn tolerations(&mut self, v: Vec<Toleration>) -> Shared<Vec<Toleration>> {
        self.tolerations.intern(v)
    }

    /// The shared copy of a pod's container states.
    pub fn states(&mut self, v: Vec<ContainerState>) -> Shared<Vec<ContainerState>> {
        self.states.intern(v)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use crate::model::shared::Shared;

    fn replica(name: &str) -> core::Pod {
        core::Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("shop".into()),
                labels: Some([("app".to_string(), "cart".to_string())].into()),
                owner_references: Some(vec![OwnerReference {
                    kind: "ReplicaSet".into(),
                    name: "cart-7d9f".into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            spec: Some(core::PodSpec {
                tolerations: Some(vec![core::Toleration {
                    key: Some("node.kubernetes.io/not-ready".into()),
                    operator: Some("Exists".into()),
                    effect: Some("NoExecute".into()),
                    toleration_seconds: Some(300),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn replicas_converted_apart_hold_one_copy_of_their_labels_namespace_owners_and_tolerations() {
        let a = crate::k8s::objects::pod(&replica("cart-1")).unwrap();
        let b = crate::k8s::objects::pod(&replica("cart-2")).unwrap();
        assert!(Shared::same_copy(&a.labels, &b.labels));
        assert!(Shared::same_copy(&a.namespace, &b.namespace));
        assert!(Shared::same_copy(&a.meta.owners, &b.meta.owners));
        assert!(Shared::same_copy(&a.meta.containers, &b.meta.containers));
        assert!(Shared::same_copy(&a.tolerations, &b.tolerations));
        assert_eq!(a.tolerations[0].key, "node.kubernetes.io/not-ready");
        let (ca, cb) = (
            a.meta.controller_name.unwrap(),
            b.meta.controller_name.unwrap(),
        );
        assert!(Shared::same_copy(&ca, &cb));
        assert_eq!(ca, "cart-7d9f");
        assert_eq!(a.meta.owners[0].kind, "ReplicaSet");
        assert_eq!(a.namespace, "shop");
        assert_eq!(a.labels.get("app").map(String::as_str), Some("cart"));
    }
}
