//! Values the pods of one workload hold alike (their labels, their namespace and its labels), kept
//! once and shared. Replicas of one owner then cost one copy, and two pods holding the same copy
//! compare equal without reading it: the equivalence grouping that every estimate starts with
//! compares each pod's labels and namespace with its neighbour's, and reading every pod's strings
//! was most of that work.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A value that may be held by many pods at once. Reads see the value; a write copies it first when
/// another holder shares it (`Arc::make_mut`), so no holder ever sees another's change.
#[derive(Default)]
pub struct Shared<T>(Arc<T>);

/// Another holder of the same copy (whatever `T` is: nothing is copied).
impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Shared<T> {
    /// Wraps a value nobody shares yet.
    pub fn new(value: T) -> Self {
        Shared(Arc::new(value))
    }

    /// Whether both hold the very same copy (then they are equal without comparing).
    pub fn same_copy(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Self::same_copy(self, other) || *self.0 == *other.0
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (*self.0).hash(state)
    }
}

impl<T: PartialOrd> PartialOrd for Shared<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (*self.0).partial_cmp(&*other.0)
    }
}

impl<T: Ord> Ord for Shared<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (*self.0).cmp(&*other.0)
    }
}

/// Printed as the value itself, so debug output reads as it did before values were shared.
impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: fmt::Display> fmt::Display for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

impl<T> Borrow<T> for Shared<T> {
    fn borrow(&self) -> &T {
        &self.0
    }
}

impl<T> AsRef<T> for Shared<T> {
    fn as_ref(&self) -> &T {
        &self.0
    }
}

/// A label map.
pub type Labels = Shared<BTreeMap<String, String>>;

impl<const N: usize> From<[(String, String); N]> for Labels {
    fn from(pairs: [(String, String); N]) -> Self {
        Shared::new(BTreeMap::from(pairs))
    }
}

impl FromIterator<(String, String)> for Labels {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        Shared::new(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a String, &'a String);
    type IntoIter = std::collections::btree_map::Iter<'a, String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A name many pods carry (their namespace).
pub type SharedName = Shared<String>;

impl SharedName {
    /// The name's text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl<'a, T> IntoIterator for &'a Shared<Vec<T>> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl From<&str> for SharedName {
    fn from(s: &str) -> Self {
        Shared::new(s.to_string())
    }
}

impl From<&String> for SharedName {
    fn from(s: &String) -> Self {
        Shared::new(s.clone())
    }
}

impl Borrow<str> for SharedName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for SharedName {
    fn eq(&self, other: &str) -> bool {
        self.0.as_str() == other
    }
}

impl PartialEq<&str> for SharedName {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_str() == *other
    }
}

impl PartialEq<String> for SharedName {
    fn eq(&self, other: &String) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<SharedName> for String {
    fn eq(&self, other: &SharedName) -> bool {
        *self == *other.0
    }
}

impl PartialEq<SharedName> for &str {
    fn eq(&self, other: &SharedName) -> bool {
        *self == other.0.as_str()
    }
}

/// Hands out one shared copy per distinct value: what a conversion of many pods uses so that replicas
/// end up holding the same labels and namespace. Copies nobody else holds any more are dropped when the
/// table has doubled since it was last swept, so a long-lived table stays the size of what is in use.
#[derive(Debug)]
pub struct Interner<T> {
    table: HashSet<Shared<T>>,
    sweep_at: usize,
}

/// The table size below which a sweep is not worth its walk.
const FIRST_SWEEP: usize = 1024;

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            table: HashSet::new(),
            sweep_at: FIRST_SWEEP,
        }
    }
}

impl<T: Eq + Hash> Interner<T> {
    /// The shared copy of `value`, made from it (without cloning) the first time it is seen.
    pub fn intern(&mut self, value: T) -> Shared<T> {
        if let Some(s) = self.table.get(&value) {
            return s.clone();
        }
        self.insert(Shared::new(value))
    }

    /// The shared copy of a borrowed value, cloned only the first time it is seen.
    pub fn intern_ref<Q>(&mut self, value: &Q) -> Shared<T>
    where
        Shared<T>: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        if let Some(s) = self.table.get(value) {
            return s.clone();
        }
        self.insert(Shared::new(value.to_owned()))
    }

    /// How many distinct values the table holds.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    fn insert(&mut self, s: Shared<T>) -> Shared<T> {
        if self.table.len() >= self.sweep_at {
            self.table.retain(|s| Arc::strong_count(&s.0) > 1);
            self.sweep_at = (self.table.len() * 2).max(FIRST_SWEEP);
        }
        self.table.insert(s.clone());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_never_reaches_the_other_holders() {
        let a: Labels = [("app".to_string(), "web".to_string())].into();
        let mut b = a.clone();
        assert!(Shared::same_copy(&a, &b));
        b.insert("tier".into(), "front".into());
        assert_eq!(a.len(), 1);
        assert_eq!(b.len(), 2);
        assert_ne!(a, b);
    }

    #[test]
    fn equal_values_compare_equal_whether_shared_or_not() {
        let a: Labels = [("app".to_string(), "web".to_string())].into();
        let b: Labels = [("app".to_string(), "web".to_string())].into();
        assert!(!Shared::same_copy(&a, &b));
        assert_eq!(a, b);
        let n: SharedName = "default".into();
        assert_eq!(n, "default");
        assert_eq!(format!("{n:?}"), "\"default\"");
    }

    #[test]
    fn the_interner_hands_out_one_copy_per_value() {
        let mut i = Interner::default();
        let x = i.intern_ref("kube-system");
        let y = i.intern("kube-system".to_string());
        let z = i.intern_ref("default");
        assert!(Shared::same_copy(&x, &y));
        assert!(!Shared::same_copy(&x, &z));
    }

    #[test]
    fn copies_nobody_holds_are_swept() {
        let mut i = Interner::default();
        let kept = i.intern_ref("kept");
        for n in 0..10 * FIRST_SWEEP {
            drop(i.intern(format!("gone-{n}")));
        }
        assert!(i.len() <= FIRST_SWEEP + 1, "{}", i.len());
        assert!(Shared::same_copy(&kept, &i.intern_ref("kept")));
    }
}
