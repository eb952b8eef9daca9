//! Which items of a dataset a batch run takes: `--ids`, `--shard I/N`, `--limit N`
//! (recorded in the run folder's `run.json`, see [`super::run_folder`]).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::item::Item;

/// Ids given to a [`Selection`] that are not in the dataset (comma-separated).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no item with id {0} in the data file")]
pub struct UnknownIds(pub String);

/// FNV-1a, 64 bits: a hash that is the same on every machine and in every
/// version, so shards split a dataset identically everywhere.
pub fn stable_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One part of a deterministic split of a dataset by item id: `I/N` takes the
/// items whose id hashes to part `I` of `N` (1-based, as in `--shard 2/4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which part, 1..=count.
    pub index: u32,
    /// How many parts.
    pub count: u32,
}

impl Shard {
    /// Whether the item with this id belongs to this shard.
    pub fn contains(&self, id: &str) -> bool {
        stable_hash(id) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = || format!("--shard \"{s}\": expected I/N with 1 ≤ I ≤ N, e.g. 2/4");
        let (i, n) = s.trim().split_once('/').ok_or_else(usage)?;
        let index: u32 = i.trim().parse().map_err(|_| usage())?;
        let count: u32 = n.trim().parse().map_err(|_| usage())?;
        if count == 0 || index == 0 || index > count {
            return Err(usage());
        }
        Ok(Shard { index, count })
    }
}

/// Which items to run, applied in this order: ids, shard, limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// Only these item ids (in the dataset's order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// At most this many items (the first ones left after the other filters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl Selection {
    /// Parse `--ids a,b,c` (commas, surrounding spaces ignored, empty parts dropped).
    pub fn parse_ids(list: &str) -> Vec<String> {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
    }

    /// The selected items, in the dataset's order. Ids that are not in the
    /// dataset are an error, so a typo does not silently run nothing.
    pub fn apply(&self, items: &[Item]) -> Result<Vec<Item>, UnknownIds> {
        let mut chosen: Vec<&Item> = items.iter().collect();
        if let Some(ids) = &self.ids {
            let known: BTreeSet<&str> = items.iter().map(|i| i.id.as_str()).collect();
            let unknown: Vec<&str> = ids.iter().map(String::as_str).filter(|id| !known.contains(id)).collect();
            if !unknown.is_empty() {
                return Err(UnknownIds(unknown.join(", ")));
            }
            let wanted: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
            chosen.retain(|i| wanted.contains(i.id.as_str()));
        }
        if let Some(shard) = self.shard {
            chosen.retain(|i| shard.contains(&i.id));
        }
        if let Some(limit) = self.limit {
            chosen.truncate(limit);
        }
        Ok(chosen.into_iter().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str) -> Item {
        Item::new(id, "x")
    }

    #[test]
    fn shards_partition_the_items() {
        let items: Vec<Item> = (0..200).map(|i| item(&format!("item-{i}"))).collect();
        let mut seen = BTreeSet::new();
        for index in 1..=3 {
            let sel = Selection { shard: Some(Shard { index, count: 3 }), ..Default::default() };
            let part = sel.apply(&items).unwrap();
            assert!(part.len() > 40, "shard {index} got only {}", part.len());
            for i in part {
                assert!(seen.insert(i.id), "an item is in two shards");
            }
        }
        assert_eq!(seen.len(), 200);
    }

    #[test]
    fn hash_is_stable() {
        // Fixed values: changing the hash would reshuffle every existing shard.
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn shard_syntax() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
        assert!("1/0".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
    }

    #[test]
    fn ids_then_limit() {
        let items: Vec<Item> = ["a", "b", "c", "d"].iter().map(|i| item(i)).collect();
        let sel = Selection { ids: Some(Selection::parse_ids("d, b ,c")), limit: Some(2), ..Default::default() };
        let got: Vec<String> = sel.apply(&items).unwrap().into_iter().map(|i| i.id).collect();
        assert_eq!(got, ["b", "c"]);
        let bad = Selection { ids: Some(vec!["zz".into()]), ..Default::default() };
        assert!(matches!(bad.apply(&items), Err(UnknownIds(s)) if s == "zz"));
    }
}
