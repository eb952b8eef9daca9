//! What the stages record of a run's way through them: what a stage's
//! condition and the aggregate's account read.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::engine::runtime::Run;

/// What became of one group on its way through the stages: what the
/// conditions and the aggregate's account read.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupPath {
    /// The latest consensus check: reached or not.
    pub agreed: Option<bool>,
    /// A discussion that stops on consensus ran (its end is an agreement or not).
    pub settled: bool,
    /// A final judge was asked: whether it decided.
    pub judged: Option<bool>,
    /// Criteria discussed apart: how the group's result was formed and what
    /// became of each criterion.
    pub criteria: Option<(&'static str, String)>,
    /// A verifier checked the members: (changed, checked).
    pub verified: Option<(usize, usize)>,
    /// The group's final evaluations are recorded as they stand.
    pub finals_recorded: bool,
}

/// The run's way through its stages.
#[derive(Debug, Default)]
pub(crate) struct Journey {
    groups: Mutex<BTreeMap<String, GroupPath>>,
    /// A first evaluation has run (a discussion can check consensus before its first round).
    evaluated: Mutex<bool>,
    /// How the scores came about (the scoring's draws, the review's
    /// changes), for the aggregate's account.
    account: Mutex<Option<String>>,
}

impl Journey {
    /// A group's path, locked (a new group's starts empty).
    pub fn group(&self, group: &str) -> GroupPathGuard<'_> {
        let mut map = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(group.to_string()).or_default();
        GroupPathGuard { map, key: group.to_string() }
    }
    pub fn evaluated(&self) -> bool {
        *self.evaluated.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn set_evaluated(&self) {
        *self.evaluated.lock().unwrap_or_else(|e| e.into_inner()) = true;
    }
    pub fn account(&self) -> Option<String> {
        self.account.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn set_account(&self, how: String) {
        *self.account.lock().unwrap_or_else(|e| e.into_inner()) = Some(how);
    }
    /// Every group's final evaluations must be recorded again (a stage moved them).
    pub fn scores_moved(&self, run: &Run) {
        for g in &run.panel.groups {
            self.group(&g.name).finals_recorded = false;
        }
    }
    /// Record a group's final evaluations as they stand.
    pub fn record_finals(&self, run: &Run, group: &str) {
        run.emit_finals(group);
        self.group(group).finals_recorded = true;
    }
}

/// One group's path, locked.
pub(crate) struct GroupPathGuard<'a> {
    map: MutexGuard<'a, BTreeMap<String, GroupPath>>,
    key: String,
}

impl std::ops::Deref for GroupPathGuard<'_> {
    type Target = GroupPath;
    fn deref(&self) -> &GroupPath {
        &self.map[&self.key]
    }
}

impl std::ops::DerefMut for GroupPathGuard<'_> {
    fn deref_mut(&mut self) -> &mut GroupPath {
        self.map.get_mut(&self.key).expect("`Journey::group` made the entry")
    }
}
