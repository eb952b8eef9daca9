//! Who speaks: a group's members and their personas (read once per group),
//! and the speaker's own line, from which a request's agent can be read back.

use std::fmt::Write;

use crate::panel::{AgentSpec, Panel};

/// The persona attributes, labelled for a list of members (third person).
const PROFILE_LABELS: [&str; 5] = ["Background", "Cares about", "Expertise", "Manner", "Relationships"];

fn profile(agent: &AgentSpec) -> [&str; 5] {
    [&agent.demographics, &agent.perspective, &agent.specialty, &agent.traits, &agent.relationships].map(|v| v.trim())
}

/// A group's members and their personas. It goes into the group's shared
/// message, after the item: every member's prompt (and the moderator's)
/// carries it, so it is read once per group and each turn names only its
/// speaker. Empty for a group the panel does not have.
pub fn roster(panel: &Panel, group: &str) -> String {
    let Some(spec) = panel.groups.iter().find(|g| g.name == group) else { return String::new() };
    let mut s = format!("The \"{group}\" stakeholder group");
    if !spec.description.trim().is_empty() {
        let _ = write!(s, " ({})", spec.description.trim().trim_end_matches('.'));
    }
    s.push_str(" has these members:\n");
    for agent in &spec.agents {
        let _ = write!(s, "- {}", agent.name);
        if !agent.role.trim().is_empty() {
            let _ = write!(s, ", {}", agent.role.trim());
        }
        s.push('\n');
        for (label, value) in PROFILE_LABELS.iter().zip(profile(agent)) {
            if !value.is_empty() {
                let _ = writeln!(s, "  {label}: {value}");
            }
        }
    }
    s
}

/// Who the speaker is. Its first line is `You are <name>, …` (see
/// [`agent_named_in`]). The full persona is in the group's [`roster`], which
/// the shared message carries; this names the speaker and repeats what they
/// care about. For an agent of no group of the panel, the whole persona.
pub fn persona(panel: &Panel, group: &str, agent: &AgentSpec) -> String {
    let listed = panel.agent(&agent.name).is_some_and(|(g, _)| g.name == group);
    persona_text(group, agent, !listed)
}

/// The speaker's persona: with `whole`, every attribute of its profile;
/// otherwise its name and what it cares about, the rest being in the
/// group's [`roster`].
pub(super) fn persona_text(group: &str, agent: &AgentSpec, whole: bool) -> String {
    let mut s = format!("You are {}", agent.name);
    if !agent.role.is_empty() {
        let _ = write!(s, ", {}", agent.role);
    }
    let _ = write!(s, ", a member of the \"{group}\" stakeholder group");
    if !whole {
        s.push_str(" (your profile is in the list above).\n");
        if !agent.perspective.trim().is_empty() {
            let _ = writeln!(s, "What you care about: {}", agent.perspective.trim());
        }
        return s;
    }
    s.push_str(".\n");
    for (label, value) in
        ["About you", "What you care about", "Your expertise", "How you tend to think and speak", "Your relationships"]
            .iter()
            .zip(profile(agent))
    {
        if !value.is_empty() {
            let _ = writeln!(s, "{label}: {value}");
        }
    }
    s
}

/// The agent a request speaks to: the name in the `You are <name>, …` line
/// that [`persona`] writes into the speaker's message of an agent's request
/// (its third message, after the system prompt and the shared part).
pub fn agent_named_in(user_message: &str) -> Option<&str> {
    user_message
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("You are "))
        .find_map(|rest| rest.split_once(", a member of").map(|(head, _)| head.split(',').next().unwrap_or(head)))
}

/// Who the judge is, when the panel gives it a persona.
pub fn judge_line(judge: &AgentSpec) -> String {
    let mut s = format!("You are {}", judge.name);
    if !judge.role.trim().is_empty() {
        let _ = write!(s, ", {}", judge.role.trim());
    }
    s.push('.');
    if !judge.perspective.trim().is_empty() {
        let _ = write!(s, " What you care about: {}", judge.perspective.trim());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prompts::{debate_messages, initial_messages, render_item};

    #[test]
    fn personas_are_read_once_per_group_and_each_turn_names_its_speaker() {
        let panel =
            crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea"]), ("Kids", &["Cy"])]);
        let item = crate::testkit::item();
        let agents: Vec<_> = panel.agents().collect();
        let ann = debate_messages(&panel, "Parents", agents[0].1, &item, &[], None);
        let bea = debate_messages(&panel, "Parents", agents[1].1, &item, &[], None);
        let cy = debate_messages(&panel, "Kids", agents[2].1, &item, &[], None);
        assert_eq!(ann[1].content, bea[1].content, "one shared message for the group");
        assert_ne!(ann[1].content, cy[1].content, "another group has its own members");
        for name in ["- Ann", "- Bea", "Cares about: cares about clarity", "Expertise: reading"] {
            assert!(ann[1].content.contains(name), "{name} missing from the roster");
        }
        assert!(!ann[1].content.contains("- Cy"));
        assert!(ann[2].content.contains("What you care about: cares about clarity"));
        assert!(!ann[2].content.contains("Expertise"), "the speaker's part does not repeat the whole persona");
        // A first evaluation is made alone: every agent shares the item, and
        // its own part carries its whole persona.
        let first = |i: usize, g: &str| initial_messages(&panel, g, agents[i].1, &item, false);
        let (ann1, cy1) = (first(0, "Parents"), first(2, "Kids"));
        assert_eq!(ann1[1].content, render_item(&item));
        assert_eq!(ann1[1].content, cy1[1].content, "one shared message for the whole panel");
        assert!(ann1[2].content.contains("Your expertise: reading") && agent_named_in(&ann1[2].content) == Some("Ann"));
        assert!(!ann1[2].content.contains("Bea"), "nobody else's profile");
        // An agent of no group of the panel gets its whole persona in its own part.
        let stray = persona(&panel, "Elsewhere", agents[0].1);
        assert!(stray.contains("Your expertise: reading") && agent_named_in(&stray) == Some("Ann"));
    }
}
