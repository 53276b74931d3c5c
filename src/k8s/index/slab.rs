//! The converted objects of one kind, kept contiguous so the engine reads them as a slice, with a key
//! map for changes; objects that could not be converted are kept as their errors.

use std::collections::{BTreeMap, HashMap};

use crate::k8s::watch::feed::{Changes, Converted};

/// Model values `M` with what the adapter keeps beside them `X`, by key.
pub struct Slab<M, X = ()> {
    items: Vec<M>,
    extra: Vec<X>,
    keys: Vec<String>,
    /// Whether each item changed since [`Slab::settle`].
    fresh: Vec<bool>,
    slots: HashMap<String, usize>,
    /// Objects that cannot be used, by key, with why.
    errors: BTreeMap<String, String>,
}

impl<M, X> Default for Slab<M, X> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            extra: Vec::new(),
            keys: Vec::new(),
            fresh: Vec::new(),
            slots: HashMap::new(),
            errors: BTreeMap::new(),
        }
    }
}

impl<M, X> Slab<M, X> {
    /// The model values, in no particular order.
    pub fn items(&self) -> &[M] {
        &self.items
    }

    /// What the adapter keeps beside each value, in `items`' order.
    pub fn extras(&self) -> &[X] {
        &self.extra
    }

    /// Mutable access for what the index resolves after conversion (claims, owners, limits).
    pub(super) fn parts_mut(&mut self) -> (&mut [M], &[X], &[String], &[bool]) {
        (&mut self.items, &self.extra, &self.keys, &self.fresh)
    }

    /// The value and its extra of `key`.
    pub fn get(&self, key: &str) -> Option<(&M, &X)> {
        let i = *self.slots.get(key)?;
        Some((&self.items[i], &self.extra[i]))
    }

    /// Objects that cannot be used, by key, with why.
    pub fn errors(&self) -> &BTreeMap<String, String> {
        &self.errors
    }

    /// Applies what a feed delivered; returns how many changes there were.
    pub fn apply(&mut self, changes: Changes<(M, X)>) -> usize {
        let mut n = 0;
        if let Some(all) = changes.replace {
            *self = Slab::default();
            n += all.len().max(1);
            for (key, value) in all {
                self.upsert(key, value);
            }
        }
        n += changes.changes.len();
        for (key, value) in changes.changes {
            match value {
                Some(v) => self.upsert(key, v),
                None => self.remove(&key),
            }
        }
        n
    }

    fn upsert(&mut self, key: String, value: Converted<(M, X)>) {
        let (m, x) = match value {
            Ok(v) => v,
            Err(e) => {
                self.remove(&key);
                self.errors.insert(key, e);
                return;
            }
        };
        self.errors.remove(&key);
        match self.slots.get(&key) {
            Some(&i) => {
                self.items[i] = m;
                self.extra[i] = x;
                self.fresh[i] = true;
            }
            None => {
                self.slots.insert(key.clone(), self.items.len());
                self.items.push(m);
                self.extra.push(x);
                self.keys.push(key);
                self.fresh.push(true);
            }
        }
    }

    /// Takes `key` out (an object gone, or one that can no longer be used).
    pub(super) fn remove(&mut self, key: &str) {
        self.errors.remove(key);
        let Some(i) = self.slots.remove(key) else {
            return;
        };
        self.items.swap_remove(i);
        self.extra.swap_remove(i);
        self.keys.swap_remove(i);
        self.fresh.swap_remove(i);
        if let Some(moved) = self.keys.get(i) {
            self.slots.insert(moved.clone(), i);
        }
    }

    /// Takes `key` out as unusable for `why`, returning its value and extra.
    pub(super) fn set_aside(&mut self, key: &str, why: String) -> Option<(M, X)> {
        let i = *self.slots.get(key)?;
        let last = self.items.len() - 1;
        self.items.swap(i, last);
        self.extra.swap(i, last);
        let (m, x) = (self.items.pop()?, self.extra.pop()?);
        self.remove_slot(i, last, key);
        self.errors.insert(key.to_string(), why);
        Some((m, x))
    }

    fn remove_slot(&mut self, i: usize, last: usize, key: &str) {
        self.slots.remove(key);
        self.keys.swap(i, last);
        self.keys.pop();
        self.fresh.swap(i, last);
        self.fresh.pop();
        if let Some(moved) = self.keys.get(i) {
            self.slots.insert(moved.clone(), i);
        }
    }

    /// Whether any item changed since the last [`Slab::settle`].
    pub fn any_fresh(&self) -> bool {
        self.fresh.iter().any(|f| *f)
    }

    /// Marks every item as seen.
    pub fn settle(&mut self) {
        self.fresh.iter_mut().for_each(|f| *f = false);
    }

    /// Puts back a value taken out with [`Slab::set_aside`] (it counts as changed).
    pub(super) fn restore(&mut self, key: String, m: M, x: X) {
        self.upsert(key, Ok((m, x)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Change<'a> = (&'a str, Option<Converted<(i32, ())>>);

    fn changes(c: Vec<Change>) -> Changes<(i32, ())> {
        Changes {
            replace: None,
            changes: c.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }

    #[test]
    fn keys_follow_items_through_removals_and_errors() {
        let mut s: Slab<i32> = Slab::default();
        s.apply(changes(vec![
            ("a", Some(Ok((1, ())))),
            ("b", Some(Ok((2, ())))),
            ("c", Some(Ok((3, ())))),
        ]));
        s.apply(changes(vec![("a", None), ("b", Some(Err("bad".into())))]));
        assert_eq!(s.items(), &[3]);
        assert_eq!(s.get("c").map(|v| *v.0), Some(3));
        assert_eq!(s.errors().get("b").map(String::as_str), Some("bad"));
        s.apply(changes(vec![
            ("b", Some(Ok((20, ())))),
            ("c", Some(Ok((30, ())))),
        ]));
        assert!(s.errors().is_empty());
        let mut items = s.items().to_vec();
        items.sort();
        assert_eq!(items, vec![20, 30]);
        assert_eq!(s.set_aside("c", "why".into()).map(|v| v.0), Some(30));
        assert_eq!(s.get("b").map(|v| *v.0), Some(20));
        assert!(s.get("c").is_none());
        assert!(s.any_fresh());
        s.settle();
        assert!(!s.any_fresh());
        s.restore("c".into(), 31, ());
        assert!(s.errors().is_empty() && s.any_fresh());
        assert_eq!(s.get("c").map(|v| *v.0), Some(31));
    }
}
