//! Finding the field an event's error is about by reading pruned copies of
//! the line.
//!
//! serde reads an object's fields in order and stops at the first bad value;
//! required fields are checked after the last one. So a copy of the line cut
//! down to the fields up to and including the bad one fails with the very
//! same message, and a copy cut before it does not (it reads, or misses a
//! field). Walking down from the event, the first prefix of each object or
//! array that repeats the message names the next step of the path.

use serde_json::{Map, Value};

use super::super::event::Event;

/// The fields every probe keeps: an event cannot be read without them.
const PINNED: [&str; 3] = ["type", "seq", "t"];

/// Objects tried for a missing field before it is put on the event.
const MAX_MISSING_TRIES: usize = 64;

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// `evaluation.scores.grammar`, `agents[1].model`.
pub fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The value at `path`.
pub fn get<'a>(v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, step| match step {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.get(i),
    })
}

fn message_of(probe: Value) -> Option<String> {
    serde_json::from_value::<Event>(probe).err().map(|e| e.to_string())
}

/// The children of a container, in the order serde reads them.
fn children(v: &Value, root: bool) -> Vec<Step> {
    match v {
        Value::Object(m) => {
            m.keys().filter(|k| !(root && PINNED.contains(&k.as_str()))).map(|k| Step::Key(k.clone())).collect()
        }
        Value::Array(a) => (0..a.len()).map(Step::Index).collect(),
        _ => Vec::new(),
    }
}

/// `v` cut down to its pinned fields (at the root) and its first `keep` children.
fn prefix(v: &Value, keep: usize, root: bool) -> Value {
    match v {
        Value::Object(m) => {
            let mut taken = 0;
            let mut out = Map::new();
            for (k, x) in m {
                if root && PINNED.contains(&k.as_str()) {
                    out.insert(k.clone(), x.clone());
                } else if taken < keep {
                    taken += 1;
                    out.insert(k.clone(), x.clone());
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().take(keep).cloned().collect()),
        other => other.clone(),
    }
}

/// The line cut down along `path`: every container on the way keeps the
/// children up to the step taken, and the last one its first `keep`.
fn probe(v: &Value, path: &[Step], keep: usize, root: bool) -> Value {
    let Some((step, rest)) = path.split_first() else {
        return prefix(v, keep, root);
    };
    let kids = children(v, root);
    let upto = kids.iter().position(|k| k == step).map_or(kids.len(), |i| i + 1);
    let mut out = prefix(v, upto, root);
    let child = match step {
        Step::Key(k) => out.get_mut(k),
        Step::Index(i) => out.get_mut(*i),
    };
    if let Some(child) = child {
        *child = probe(child, rest, keep, false);
    }
    out
}

/// The path to the value a value error (`message`) is about.
pub fn culprit(v: &Value, message: &str) -> Vec<Step> {
    let mut path = Vec::new();
    while let Some(node) = get(v, &path) {
        let kids = children(node, path.is_empty());
        // A node that fails with nothing in it is itself the culprit
        // (a map where a string belongs, an untagged value that fits no shape).
        if kids.is_empty() || message_of(probe(v, &path, 0, true)).as_deref() == Some(message) {
            break;
        }
        // Whether a prefix repeats the message only grows with its length:
        // the shortest that does ends with the culprit.
        let repeats = |keep: usize| message_of(probe(v, &path, keep, true)).as_deref() == Some(message);
        let (mut lo, mut hi) = (1, kids.len());
        if !repeats(hi) {
            break;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if repeats(mid) { hi = mid } else { lo = mid + 1 }
        }
        path.push(kids[lo - 1].clone());
    }
    path
}

/// The path to a required field `name` that is absent: the first object
/// (the event first, then depth first) where giving the field a value
/// changes the error.
pub fn missing(v: &Value, name: &str) -> Vec<Step> {
    let original = message_of(v.clone());
    let mut stack = vec![Vec::new()];
    let mut tried = 0;
    while let Some(path) = stack.pop() {
        // A line with thousands of objects is not worth reading thousands of times.
        if tried == MAX_MISSING_TRIES {
            break;
        }
        let Some(node) = get(v, &path) else { continue };
        if let Value::Object(m) = node
            && !m.contains_key(name)
        {
            tried += 1;
            let mut filled = v.clone();
            if let Some(Value::Object(m)) = get_mut(&mut filled, &path) {
                m.insert(name.to_string(), Value::from(0));
            }
            if message_of(filled) != original {
                let mut found = path.clone();
                found.push(Step::Key(name.to_string()));
                return found;
            }
        }
        for kid in children(node, false).into_iter().rev() {
            let mut deeper = path.clone();
            deeper.push(kid);
            if get(v, &deeper).is_some_and(|x| x.is_object() || x.is_array()) {
                stack.push(deeper);
            }
        }
    }
    vec![Step::Key(name.to_string())]
}

fn get_mut<'a>(v: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        Step::Key(k) => v.get_mut(k),
        Step::Index(i) => v.get_mut(*i),
    })
}
