//! Loading panels and items: bundled assets, validation messages with
//! positions, and the skip-and-report behaviour of item files.

use std::path::{Path, PathBuf};

use moot::item::{self, ItemFormat, ItemsError, ItemsFile};
use moot::panel::{self, ConsensusRule, ModeratorPolicy, Panel, PanelError, Protocol};

const BASE: &str = r#"name = "Test panel"
protocol = "maj-eval"
task = "Judge the text."

[scale]
min = 1
max = 5

[moderator]
policy = "llm"
max_turns = 4

[consensus]
rule = "range"
tolerance = 1

[generation]
temperature = 0.7
max_tokens = 300

[[dimensions]]
key = "clarity"
name = "Clarity"

[[dimensions]]
key = "accuracy"

[[groups]]
name = "Readers"

[[groups.agents]]
name = "Ana"
role = "Reader"

[[groups.agents]]
name = "Ben"
temperature = 0.5
"#;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// BASE with `from` (which must occur exactly once) replaced by `to`.
fn edit(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from:?} must occur once in BASE");
    BASE.replacen(from, to, 1)
}

/// The error message for panel text that must fail.
fn error_of(text: &str) -> String {
    match Panel::from_toml_str(text, "panel.toml") {
        Ok(_) => panic!("panel should have been rejected:\n{text}"),
        Err(e) => e.to_string(),
    }
}

// --- panels: valid ----------------------------------------------------------

#[test]
fn base_panel_is_valid_and_keeps_its_source() {
    let p = Panel::from_toml_str(BASE, "panel.toml").expect("BASE is valid");
    assert_eq!(p.source.as_deref(), Some(Path::new("panel.toml")));
    assert_eq!(p.protocol, Protocol::MajEval);
    assert_eq!(p.dimension_keys(), ["clarity", "accuracy"]);
    assert_eq!(p.agents().count(), 2);
    assert_eq!(p.agent("Ben").map(|(_, a)| a.model.temperature), Some(Some(0.5)));
    assert_eq!(p.moderator.max_turns, 4);
}

#[test]
fn defaults_apply_when_sections_are_left_out() {
    let text = "name = \"n\"\nprotocol = \"collab-eval\"\ntask = \"t\"\n\
                dimensions = [{ key = \"q\" }]\ngroups = [{ name = \"g\", agents = [{ name = \"a\" }] }]\n";
    let p = Panel::from_toml_str(text, "min.toml").expect("minimal panel is valid");
    assert_eq!(p.scale.min, 1.0);
    assert_eq!(p.scale.max, 5.0);
    assert_eq!(p.moderator.policy, ModeratorPolicy::Llm);
    assert_eq!(p.moderator.max_turns, 8);
    assert_eq!(p.consensus.rule, ConsensusRule::Range);
    assert_eq!(p.consensus.tolerance, 1.0);
    assert_eq!(p.consensus.max_rounds, 3);
    assert_eq!(p.generation.max_tokens, 700);
    assert_eq!(p.generation.seed, None);
    assert_eq!(p.final_judge.provider, None);
}

#[test]
fn integer_temperatures_and_tolerances_are_numbers() {
    let text = edit("temperature = 0.5", "temperature = 1").replace("temperature = 0.7", "temperature = 0");
    let p = Panel::from_toml_str(&text, "panel.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.agent("Ben").and_then(|(_, a)| a.model.temperature), Some(1.0));
    assert_eq!(p.generation.temperature, 0.0);
    assert_eq!(p.consensus.tolerance, 1.0);
}

#[test]
fn every_bundled_panel_loads_from_its_file_and_from_the_binary() {
    assert!(panel::BUNDLED_PANELS.len() >= 2);
    for (stem, _) in panel::BUNDLED_PANELS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/panels/{stem}.toml"));
        let from_file = Panel::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let bundled = Panel::bundled(stem).unwrap_or_else(|| panic!("bundled {stem} is invalid"));
        assert_eq!(bundled.source.as_deref(), Some(Path::new(&format!("bundled:{stem}"))));
        assert_eq!(from_file.groups, bundled.groups);
        for (_, agent) in bundled.agents() {
            for (field, value) in [
                ("role", &agent.role),
                ("demographics", &agent.demographics),
                ("perspective", &agent.perspective),
                ("specialty", &agent.specialty),
                ("traits", &agent.traits),
                ("relationships", &agent.relationships),
            ] {
                assert!(!value.trim().is_empty(), "{stem}: agent {} has no {field}", agent.name);
            }
        }
        for d in &bundled.dimensions {
            assert!(!d.name.is_empty() && !d.description.is_empty(), "{stem}: dimension {} undocumented", d.key);
        }
    }
}

#[test]
fn storybook_panel_has_the_documented_settings() {
    let p = Panel::bundled("storybook-qa").expect("bundled");
    assert_eq!(p.protocol, Protocol::MajEval);
    assert_eq!(
        p.dimension_keys(),
        ["grammar", "answer_relevancy", "contextual_consistency", "educational_appropriateness"]
    );
    assert_eq!((p.scale.min, p.scale.max), (1.0, 5.0));
    assert_eq!(p.moderator.policy, ModeratorPolicy::Llm);
    assert_eq!(p.moderator.max_turns, 4);
    assert_eq!((p.consensus.rule, p.consensus.tolerance), (ConsensusRule::Range, 1.0));
    assert_eq!(p.generation.seed, Some(7));
    assert_eq!(p.groups.len(), 3);
    // Three members a group: after each turn the LLM moderator chooses
    // between the two who did not just speak.
    assert!(p.groups.iter().all(|g| g.agents.len() == 3), "{:?}", p.groups);
    let names: std::collections::HashSet<&str> = p.agents().map(|(_, a)| a.name.as_str()).collect();
    assert_eq!(names.len(), 9, "every member has a name of their own");

    let s = Panel::bundled("summary-collab").expect("bundled");
    assert_eq!(s.protocol, Protocol::CollabEval);
    assert_eq!(s.dimension_keys(), ["coherence", "consistency", "fluency", "relevance"]);
    assert_eq!(s.consensus.max_rounds, 3);
    assert_eq!(s.agents().count(), 3);
    assert!(s.groups.iter().all(|g| g.agents.len() == 3));
    assert_eq!(s.final_judge.model, None);
}

#[test]
fn resolve_accepts_paths_and_bundled_names() {
    assert_eq!(Panel::resolve("storybook-qa").expect("name").name, "Storybook QA");
    assert_eq!(Panel::resolve("bundled:summary-collab").expect("prefixed").protocol, Protocol::CollabEval);
    let path = fixture("panels/empty-group.toml");
    let err = Panel::resolve(path.to_str().expect("utf-8 path")).expect_err("invalid file");
    assert!(err.to_string().contains("groups[1].agents"), "{err}");

    let err = Panel::resolve("no-such-panel").expect_err("unknown");
    assert!(matches!(err, PanelError::NotFound { .. }));
    assert!(err.to_string().contains("storybook-qa, summary-collab"), "{err}");

    let err = Panel::resolve("missing/dir/p.toml").expect_err("missing file");
    assert!(matches!(err, PanelError::Read { .. }), "{err}");
    assert!(err.to_string().starts_with("missing/dir/p.toml: cannot read panel"), "{err}");
}

// --- panels: errors from files ----------------------------------------------

#[test]
fn group_without_agents_names_file_line_and_field() {
    let path = fixture("panels/empty-group.toml");
    let err = Panel::load(&path).expect_err("empty group");
    assert_eq!(err.position(), Some((16, 10)));
    assert_eq!(err.field(), Some("groups[1].agents"));
    assert_eq!(
        err.to_string(),
        format!("{}:16:10: groups[1].agents: a group needs at least one agent", path.display())
    );
}

#[test]
fn duplicate_agent_points_at_the_second_name() {
    let path = fixture("panels/duplicate-agent.toml");
    let err = Panel::load(&path).expect_err("duplicate");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:20:8: groups[1].agents[0].name: duplicate agent name \"Ana\" (first on line 12); \
             agent names must be unique in a panel",
            path.display()
        )
    );
}

#[test]
fn toml_syntax_error_has_line_and_column() {
    let path = fixture("panels/syntax-error.toml");
    let err = Panel::load(&path).expect_err("syntax");
    assert!(matches!(err, PanelError::Syntax { line: 7, .. }), "{err:?}");
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("{}:7:16: TOML syntax error: ", path.display())), "{shown}");
}

#[test]
fn missing_file_is_a_read_error() {
    let err = Panel::load(Path::new("does/not/exist.toml")).expect_err("missing");
    assert!(matches!(err, PanelError::Read { .. }));
    assert!(err.to_string().starts_with("does/not/exist.toml: cannot read panel: "), "{err}");
}

// --- panels: every validation rule ------------------------------------------

#[test]
fn unknown_protocol_lists_the_valid_ones() {
    assert_eq!(
        error_of(&edit("protocol = \"maj-eval\"", "protocol = \"maj_eval\"")),
        "panel.toml:2:12: protocol: unknown protocol \"maj_eval\" (did you mean \"maj-eval\"?); valid: maj-eval, collab-eval, g-eval, sage-eval, chat-eval, round-table, pairwise, composition"
    );
    assert_eq!(
        error_of(&edit("protocol = \"maj-eval\"", "protocol = \"vote\"")),
        "panel.toml:2:12: protocol: unknown protocol \"vote\"; valid: maj-eval, collab-eval, g-eval, sage-eval, chat-eval, round-table, pairwise, composition"
    );
}

#[test]
fn unknown_moderator_policy_lists_the_valid_ones() {
    let valid: Vec<&str> = ModeratorPolicy::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(
        error_of(&edit("policy = \"llm\"", "policy = \"loudest\"")),
        format!(
            "panel.toml:10:10: moderator.policy: unknown moderator policy \"loudest\"; valid: {}",
            valid.join(", ")
        )
    );
}

#[test]
fn unknown_consensus_rule_lists_the_valid_ones() {
    assert_eq!(
        error_of(&edit("rule = \"range\"", "rule = \"median\"")),
        "panel.toml:14:8: consensus.rule: unknown consensus rule \"median\"; valid: exact, range, stdev"
    );
}

#[test]
fn unknown_fields_are_named_where_they_are() {
    assert_eq!(
        error_of(&edit("role = \"Reader\"", "role = \"Reader\"\npersona = \"x\"")),
        "panel.toml:34:1: groups[0].agents[0].persona: unknown field; valid fields here: name, role, demographics, \
         perspective, specialty, traits, relationships, provider, model, temperature, max_tokens"
    );
    let msg = error_of(&edit("max_turns = 4", "max_turn = 4"));
    assert!(msg.starts_with("panel.toml:11:1: moderator.max_turn: unknown field (did you mean `max_turns`?)"), "{msg}");
    let msg = error_of(&edit("task = \"Judge the text.\"", "task = \"Judge the text.\"\ndescription = \"x\""));
    assert!(msg.starts_with("panel.toml:4:1: description: unknown field; valid fields here: name, protocol"), "{msg}");
    // A misspelt required field is named as the unknown key, not as missing.
    let msg = error_of(&edit("name = \"Ana\"", "nme = \"Ana\""));
    assert!(msg.starts_with("panel.toml:32:1: groups[0].agents[0].nme: unknown field (did you mean `name`?)"), "{msg}");
    let msg = error_of(&edit("max = 5", "maximum = 5"));
    assert_eq!(msg, "panel.toml:7:1: scale.maximum: unknown field; valid fields here: min, max");
}

#[test]
fn duplicate_agent_names_across_groups() {
    let text = format!("{BASE}\n[[groups]]\nname = \"Writers\"\n\n[[groups.agents]]\nname = \"Ben\"\n");
    assert_eq!(
        error_of(&text),
        "panel.toml:43:8: groups[1].agents[0].name: duplicate agent name \"Ben\" (first on line 36); \
         agent names must be unique in a panel"
    );
}

#[test]
fn duplicate_group_names() {
    let text = format!("{BASE}\n[[groups]]\nname = \"Readers\"\n\n[[groups.agents]]\nname = \"Cy\"\n");
    assert_eq!(error_of(&text), "panel.toml:40:8: groups[1].name: duplicate group name \"Readers\" (first on line 29)");
}

#[test]
fn duplicate_dimension_keys() {
    assert_eq!(
        error_of(&edit("key = \"accuracy\"", "key = \"clarity\"")),
        "panel.toml:26:7: dimensions[1].key: duplicate dimension key \"clarity\" (first on line 22)"
    );
}

#[test]
fn group_with_no_agents_key() {
    let text = edit(
        "[[groups.agents]]\nname = \"Ana\"\nrole = \"Reader\"\n\n[[groups.agents]]\nname = \"Ben\"\ntemperature = 0.5\n",
        "",
    );
    assert_eq!(error_of(&text), "panel.toml:28:1: groups[0].agents: a group needs at least one agent");
}

#[test]
fn no_groups() {
    let cut = BASE.find("[[groups]]").expect("groups");
    assert_eq!(
        error_of(&BASE[..cut]),
        "panel.toml:1:1: groups: missing required field: a panel needs at least one group"
    );
    let text =
        format!("{}dimensions = [{{ key = \"q\" }}]\ngroups = []\n", &BASE[..BASE.find("[scale]").expect("scale")]);
    assert_eq!(error_of(&text), "panel.toml:6:10: groups: must not be empty: a panel needs at least one group");
}

#[test]
fn empty_dimensions() {
    let start = BASE.find("[[dimensions]]").expect("dims");
    let end = BASE.find("[[groups]]").expect("groups");
    let text = format!("{}{}", &BASE[..start], &BASE[end..]).replace("[scale]", "dimensions = []\n\n[scale]");
    assert_eq!(error_of(&text), "panel.toml:5:14: dimensions: must not be empty: a panel needs at least one dimension");
}

#[test]
fn dimension_keys_must_be_identifiers() {
    assert_eq!(
        error_of(&edit("key = \"accuracy\"", "key = \"fact check\"")),
        "panel.toml:26:7: dimensions[1].key: dimension key \"fact check\" must be letters, digits and underscores, \
         not starting with a digit"
    );
    assert!(error_of(&edit("key = \"accuracy\"", "key = \"2nd\"")).contains("dimensions[1].key"));
}

#[test]
fn scale_min_must_be_below_max() {
    assert_eq!(
        error_of(&edit("max = 5", "max = 1")),
        "panel.toml:7:7: scale.max: scale min (1) must be less than max (1)"
    );
    assert_eq!(
        error_of(&edit("max = 5", "max = 0.5")),
        "panel.toml:7:7: scale.max: scale min (1) must be less than max (0.5)"
    );
}

#[test]
fn max_turns_and_max_rounds_must_be_positive() {
    assert_eq!(
        error_of(&edit("max_turns = 4", "max_turns = 0")),
        "panel.toml:11:13: moderator.max_turns: must be at least 1, found 0"
    );
    assert_eq!(
        error_of(&edit("tolerance = 1", "tolerance = 1\nmax_rounds = 0")),
        "panel.toml:16:14: consensus.max_rounds: must be at least 1, found 0"
    );
}

#[test]
fn tolerance_must_not_be_negative() {
    assert_eq!(
        error_of(&edit("tolerance = 1", "tolerance = -0.5")),
        "panel.toml:15:13: consensus.tolerance: must not be negative, found -0.5"
    );
}

#[test]
fn temperature_must_be_between_0_and_2() {
    assert_eq!(
        error_of(&edit("temperature = 0.7", "temperature = 2.5")),
        "panel.toml:18:15: generation.temperature: must be between 0 and 2, found 2.5"
    );
    assert_eq!(
        error_of(&edit("temperature = 0.5", "temperature = -1")),
        "panel.toml:37:15: groups[0].agents[1].temperature: must be between 0 and 2, found -1"
    );
}

#[test]
fn max_tokens_must_be_positive() {
    assert_eq!(
        error_of(&edit("max_tokens = 300", "max_tokens = 0")),
        "panel.toml:19:14: generation.max_tokens: must be at least 1, found 0"
    );
    assert_eq!(
        error_of(&edit("role = \"Reader\"", "role = \"Reader\"\nmax_tokens = 0")),
        "panel.toml:34:14: groups[0].agents[0].max_tokens: must be at least 1, found 0"
    );
}

#[test]
fn task_and_agent_name_must_not_be_empty() {
    assert_eq!(
        error_of(&edit("task = \"Judge the text.\"", "task = \"  \"")),
        "panel.toml:3:8: task: must not be empty"
    );
    assert_eq!(error_of(&edit("task = \"Judge the text.\"\n", "")), "panel.toml:1:1: task: missing required field");
    assert_eq!(
        error_of(&edit("name = \"Ana\"", "name = \"\"")),
        "panel.toml:32:8: groups[0].agents[0].name: must not be empty"
    );
    assert_eq!(
        error_of(&edit("name = \"Ana\"\n", "")),
        "panel.toml:31:1: groups[0].agents[0].name: missing required field"
    );
}

#[test]
fn wrong_types_are_reported_with_the_expected_type() {
    assert_eq!(
        error_of(&edit("max_turns = 4", "max_turns = \"four\"")),
        "panel.toml:11:13: moderator.max_turns: invalid type: string \"four\", expected an integer"
    );
    assert_eq!(
        error_of(&edit("[scale]\nmin = 1\nmax = 5\n", "scale = 5\n")),
        "panel.toml:5:9: scale: invalid type: integer `5`, expected a table"
    );
    assert_eq!(
        error_of(&edit("key = \"accuracy\"", "key = \"accuracy\"\nlabels = \"formal\"")),
        "panel.toml:27:10: dimensions[1].labels: invalid type: string \"formal\", expected an array"
    );
    assert_eq!(
        error_of(&edit("max_turns = 4", "max_turns = 1979-05-27")),
        "panel.toml:11:13: moderator.max_turns: invalid type: datetime `1979-05-27`, expected an integer"
    );
}

#[test]
fn the_first_problem_in_the_file_is_reported() {
    let text = edit("max_turns = 4", "max_turns = 0").replace("key = \"accuracy\"", "key = \"overall\"");
    assert!(error_of(&text).starts_with("panel.toml:11:13: moderator.max_turns"));
}

// --- items ---------------------------------------------------------------------

#[test]
fn bundled_items_load_and_match_their_panels() {
    for (stem, text) in item::BUNDLED_ITEMS {
        // Panels may share items (G-Eval's summary judge scores the summaries of summary-collab).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/items");
        let path = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t == *text))
            .unwrap_or_else(|| panic!("no file in assets/items holds the items bundled as {stem}"));
        let file = item::load_items(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(file.skipped.is_empty(), "{stem}: {:?}", file.skipped);
        assert_eq!(file.items.len(), 10, "{stem}");
        let bundled = ItemsFile::bundled(stem).expect("bundled items");
        assert_eq!(bundled.items, file.items);
        let panel = Panel::bundled(stem).expect("a bundled panel with the same name");
        let keys = panel.dimension_keys();
        let rated: Vec<_> = file.items.iter().filter_map(|i| i.human.as_ref()).collect();
        // The survey items ship without ratings: nobody has rated them. Pairs carry labels, not scores.
        if stem.starts_with("pairwise-") {
            let labelled = file.items.iter().filter(|i| !i.human_labels.is_empty()).count();
            assert!(labelled >= 4, "{stem}: about half the pairs have human labels");
            assert!(file.items.iter().any(|i| i.human_labels.len() > 1), "{stem}: some pairs have several raters");
            assert!(file.items.iter().all(|i| i.candidates.as_ref().is_some_and(|c| c.len() >= 2)), "{stem}");
        } else if !stem.starts_with("survey-sage") {
            assert!(rated.len() >= 4, "{stem}: about half the items have human ratings");
        }
        for human in rated {
            assert_eq!(human.keys().cloned().collect::<Vec<_>>().len(), keys.len());
            for (dim, score) in human {
                assert!(keys.contains(dim), "{stem}: unknown dimension {dim}");
                assert!(panel.scale.contains(*score) && score.fract() == 0.0, "{stem}: score {score}");
            }
        }
        for item in &file.items {
            assert!(item.context.as_deref().is_some_and(|c| c.split_whitespace().count() <= 150), "{}", item.id);
        }
    }
    let qa = ItemsFile::bundled("storybook-qa").expect("bundled");
    assert_eq!(qa.items.first().map(|i| i.id.as_str()), Some("qa-01"));
    assert_eq!(qa.items.last().map(|i| i.id.as_str()), Some("qa-10"));
    assert!(qa.items.iter().all(|i| i.content.starts_with("Question: ") && i.content.contains("\nAnswer: ")));
    assert!(qa.items.iter().any(|i| { i.context.as_deref().is_some_and(|c| c.contains("No more comments")) }));
}

#[test]
fn the_sample_opens_with_a_flawed_pair_and_ranges_from_poor_to_good() {
    let panel = moot::cli::run::load_panel(None).unwrap();
    let default = moot::cli::run::load_item(&panel, &moot::cli::RunArgs::default()).unwrap();
    let qa = ItemsFile::bundled("storybook-qa").unwrap();
    assert_eq!(default, qa.items[0], "`moot run` opens with the sample's first item");
    // Something to argue about: the people rated it well on some dimensions
    // and poorly on another, not the same everywhere.
    let human = default.human.as_ref().expect("the default item is rated");
    let (low, high) = human.values().fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
    assert!(low <= 2.0 && high == 5.0, "{} ratings {human:?}", default.id);
    // Across the items, every dimension runs from poor (1 or 2) to good (5).
    for key in panel.dimension_keys() {
        let scores: Vec<f64> = qa.items.iter().filter_map(|i| i.human.as_ref()?.get(&key).copied()).collect();
        let (min, max) = scores.iter().fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
        assert!(min <= 2.0 && max == 5.0, "{key}: {scores:?}");
    }
}

#[test]
fn jsonl_malformed_line_is_skipped_and_reported() {
    let file = item::load_items(&fixture("items/bad-line3.jsonl")).expect("three good lines");
    let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["a-1", "a-2", "a-4"]);
    assert_eq!(file.skipped.len(), 1);
    assert_eq!(file.skipped[0].line, 3);
    assert!(file.skipped[0].message.starts_with("invalid JSON at column "), "{}", file.skipped[0].message);
}

#[test]
fn blank_lines_are_ignored_and_line_numbers_stay_true() {
    let text = "\n{\"id\": \"x\", \"content\": \"c\"}\n   \n{\"id\": \"x\", \"content\": \"again\"}\n{\"id\": \"y\"}\n";
    let file = item::parse_items_str(text, ItemFormat::Jsonl, "mem.jsonl").expect("one good item");
    assert_eq!(file.items.len(), 1);
    let problems: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(problems, ["line 4: duplicate id \"x\" (first on line 2)", "line 5: item \"y\": missing `content`"]);
}

#[test]
fn wrong_types_in_items_are_skipped_with_reasons() {
    let text = r#"{"id": "a", "content": "ok", "human": {"g": "high"}}
{"id": true, "content": "ok"}
{"id": "c", "content": "ok", "context": 3}
{"id": "d", "content": "ok", "candidates": [{"id": "l"}]}
{"id": "e", "content": "fine", "human": {"g": 4, "h": null}, "extra": "ignored"}
[1, 2]
"#;
    let file = item::parse_items_str(text, ItemFormat::Jsonl, "t.jsonl").expect("one good");
    assert_eq!(file.items.len(), 1);
    assert_eq!(file.items[0].human.as_ref().map(|h| h.len()), Some(1));
    let problems: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "line 1: item \"a\": `human.g` must be a number, found a string",
            "line 2: `id` must be a string or an integer, found a boolean",
            "line 3: item \"c\": `context` must be a string, found a number",
            "line 4: item \"d\": `candidates[0]`: missing `text`",
            "line 6: expected an item object, found an array",
        ]
    );
}

#[test]
fn all_bad_file_is_an_error_naming_the_file() {
    let path = fixture("items/all-bad.jsonl");
    let err = item::load_items(&path).expect_err("nothing usable");
    let ItemsError::NoItems { problems, .. } = &err else { panic!("{err:?}") };
    assert_eq!(problems.iter().map(|p| p.line).collect::<Vec<_>>(), [1, 2, 3]);
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{}: no usable items: line 1: missing `id`; line 2: ", path.display())),
        "{shown}"
    );

    let err = item::parse_items_str("\n\n", ItemFormat::Jsonl, "empty.jsonl").expect_err("empty");
    assert_eq!(err.to_string(), "empty.jsonl: no usable items (the file is empty)");
}

#[test]
fn csv_with_human_columns() {
    let file = item::load_items(&fixture("items/ratings.csv")).expect("csv");
    let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["c-1", "c-2", "c-4"]);
    let first = &file.items[0];
    assert_eq!(first.content, "A summary, with a comma.");
    assert_eq!(first.context.as_deref(), Some("The source text."));
    let human = first.human.as_ref().expect("ratings");
    assert_eq!(human.get("clarity"), Some(&4.0));
    assert_eq!(human.get("accuracy"), Some(&5.0));
    assert_eq!(human.len(), 2, "the `notes` column is ignored");
    let second = &file.items[1];
    assert_eq!(second.content, "A summary\nover two lines.");
    assert_eq!(second.context, None);
    assert_eq!(second.human.as_ref().map(|h| h.len()), Some(1), "an empty cell is no rating");
    assert_eq!(file.items[2].human.as_ref().and_then(|h| h.get("clarity")), Some(&2.5));
    assert_eq!(file.skipped.len(), 1);
    assert_eq!(file.skipped[0].line, 5, "the row after a two-line cell starts on line 5");
    assert_eq!(file.skipped[0].message, "item \"c-3\": human score for `clarity` is not a number: \"high\"");
}

#[test]
fn csv_candidates_and_missing_columns() {
    let text = "id,content,candidate_a,candidate.b\np1,Which is better?,Left answer,Right answer\n";
    let file = item::parse_items_str(text, ItemFormat::Csv, "pairs.csv").expect("csv");
    let cands = file.items[0].candidates.as_ref().expect("candidates");
    assert_eq!(
        cands.iter().map(|c| (c.id.as_str(), c.text.as_str())).collect::<Vec<_>>(),
        [("a", "Left answer"), ("b", "Right answer")]
    );

    let err = item::parse_items_str("id,text\n1,hello\n", ItemFormat::Csv, "x.csv").expect_err("no content column");
    assert_eq!(err.to_string(), "x.csv:1:1: the CSV header has no `content` column (columns: id, text)");

    let file = item::parse_items_str("id,content\n1,a,extra\n2,b\n", ItemFormat::Csv, "y.csv").expect("one row ok");
    assert_eq!(file.items.len(), 1);
    assert_eq!(file.skipped[0].to_string(), "line 2: row has 3 fields, the header has 2");
}

#[test]
fn json_array_with_numeric_ids_and_per_element_lines() {
    let file = item::load_items(&fixture("items/array.json")).expect("json");
    let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["1", "j-2"]);
    assert_eq!(file.items[1].reference.as_deref(), Some("The gold text."));
    let cands = file.items[1].candidates.as_ref().expect("candidates");
    assert_eq!(cands[1].id, "2");
    let problems: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "line 9: item \"j-3\": `content` must be a string, found a number",
            "line 10: duplicate id \"1\" (first on line 2)",
        ]
    );
}

#[test]
fn json_single_object_and_syntax_errors() {
    let file =
        item::parse_items_str("  {\"id\": 7, \"content\": \"one\"}", ItemFormat::Json, "one.json").expect("object");
    assert_eq!(file.items[0].id, "7");
    let err = item::parse_items_str("[\n {\"id\": 1,,}\n]", ItemFormat::Json, "bad.json").expect_err("syntax");
    assert!(err.to_string().starts_with("bad.json:2:11: invalid JSON: "), "{err}");
    let err = item::parse_items_str("\"text\"", ItemFormat::Json, "s.json").expect_err("not items");
    assert!(err.to_string().contains("found a string"), "{err}");
}

#[test]
fn picking_an_unknown_id_lists_some_that_exist() {
    let file = ItemsFile::bundled("storybook-qa").expect("bundled");
    assert_eq!(file.get("qa-03").expect("exists").id, "qa-03");
    let err = file.get("qa-99").expect_err("missing");
    assert_eq!(
        err.to_string(),
        "bundled:storybook-qa: no item with id \"qa-99\"; available: qa-01, qa-02, qa-03, qa-04, qa-05, … (10 items in all)"
    );
}

#[test]
fn item_formats_come_from_the_extension() {
    assert_eq!(ItemFormat::from_path(Path::new("a/b.JSONL")), Some(ItemFormat::Jsonl));
    assert_eq!(ItemFormat::from_path(Path::new("b.json")), Some(ItemFormat::Json));
    assert_eq!(ItemFormat::from_path(Path::new("b.csv")), Some(ItemFormat::Csv));
    let err = item::load_items(Path::new("notes.txt")).expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "notes.txt: unknown items format; use a .jsonl, .json or .csv file, or a dataset's own file with --format \
         (mslr, mslr-pairwise, summeval, summeval-annotations, topical-chat, mt-bench, stsb)"
    );
    assert!(matches!(item::load_items(Path::new("gone.jsonl")), Err(ItemsError::Read { .. })));
}

#[test]
fn resolve_items_accepts_paths_and_bundled_names() {
    assert_eq!(item::resolve_items("summary-collab").expect("bundled").items.len(), 10);
    let path = fixture("items/ratings.csv");
    assert_eq!(item::resolve_items(path.to_str().expect("utf-8")).expect("path").items.len(), 3);
    assert!(matches!(item::resolve_items("nothing-here"), Err(ItemsError::NotFound { .. })));
}

#[test]
fn documented_examples_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/panels.md")).expect("docs/panels.md");
    let start = docs.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let end = start + docs[start..].find("```").expect("closed block");
    let p = Panel::from_toml_str(&docs[start..end], "docs/panels.md").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.agent("Chef Lee").and_then(|(_, a)| a.model.model.clone()).as_deref(), Some("gpt-4o"));

    let docs = std::fs::read_to_string(root.join("docs/items.md")).expect("docs/items.md");
    let start = docs.find("```csv\n").expect("a csv example") + "```csv\n".len();
    let end = start + docs[start..].find("```").expect("closed block");
    let file = item::parse_items_str(&docs[start..end], ItemFormat::Csv, "docs/items.md").expect("csv example");
    assert_eq!(file.items[0].human.as_ref().map(|h| h.len()), Some(2));
}

#[test]
fn reserved_agent_names_are_refused() {
    let text = moot::panel::BUNDLED_PANELS[0].1.replacen("name = \"Ms. Okafor\"", "name = \"Moderator\"", 1);
    assert_ne!(text, moot::panel::BUNDLED_PANELS[0].1, "the bundled panel names Ms. Okafor");
    let err = moot::panel::Panel::from_toml_str(&text, "p.toml").unwrap_err().to_string();
    assert!(err.contains("reserved for a panel role"), "{err}");
    assert!(err.starts_with("p.toml:"), "{err}");
}

// --- panels: the [protocol] table, roles and categorical dimensions -----------

#[test]
fn a_protocol_table_takes_the_settings_its_protocol_declares() {
    let g = |settings: &str| edit("protocol = \"maj-eval\"", &format!("[protocol]\nkind = \"g-eval\"\n{settings}"));
    // The table must come after the top-level keys: move `task` above it.
    let g = |settings: &str| {
        g(settings).replacen("task = \"Judge the text.\"\n", "", 1).replacen(
            "name = \"Test panel\"\n",
            "name = \"Test panel\"\ntask = \"Judge the text.\"\n",
            1,
        )
    };
    let p = Panel::from_toml_str(&g("samples = 5\nreview_steps = true"), "panel.toml").expect("valid");
    assert_eq!(p.protocol, Protocol::GEval);
    assert_eq!((p.protocol.integer("samples"), p.protocol.flag("review_steps")), (5, true));
    let p = Panel::from_toml_str(&g(""), "panel.toml").expect("defaults");
    assert_eq!((p.protocol.integer("samples"), p.protocol.flag("review_steps")), (1, false));
    assert_eq!(
        error_of(&g("sample = 5")),
        "panel.toml:5:1: protocol.sample: unknown field (did you mean `samples`?); valid fields here: kind, preset, samples, reply_tokens, reply, sample_temperature, score, review_steps"
    );
    assert_eq!(error_of(&g("samples = 0")), "panel.toml:5:11: protocol.samples: must be at least 1, found 0");
    // A key of another table left under [protocol] is unknown there, whatever its type.
    assert_eq!(
        error_of(&g("temperature = 0.5")),
        "panel.toml:5:1: protocol.temperature: unknown field; valid fields here: kind, preset, samples, reply_tokens, reply, sample_temperature, score, review_steps"
    );
    assert_eq!(
        error_of(&g("samples = 2.5")),
        "panel.toml:5:11: protocol.samples: invalid type: floating point `2.5`, expected an integer"
    );
    assert_eq!(
        error_of(&g("review_steps = \"yes\"")),
        "panel.toml:5:16: protocol.review_steps: invalid type: string \"yes\", expected true or false"
    );
    let no_kind = g("samples = 2").replacen("kind = \"g-eval\"\n", "", 1);
    assert!(error_of(&no_kind).contains("protocol.kind: missing required field; one of maj-eval, collab-eval, g-eval"));
    let maj = g("samples = 2").replacen("g-eval", "maj-eval", 1);
    assert_eq!(
        error_of(&maj),
        "panel.toml:5:1: protocol.samples: unknown field; valid fields here: kind, preset, personas, stance, turns, \
         first_feedback, aggregation, history, repeats, quotes, reasons, claims"
    );
}

#[test]
fn role_tables_must_name_a_role_of_the_protocol() {
    let with_roles = format!("{BASE}\n[roles.meta_evaluator]\nmodel = \"m\"\n");
    let err = error_of(&with_roles);
    assert!(
        err.ends_with("roles.meta_evaluator: not a role of this protocol; its roles: moderator, aggregator"),
        "{err}"
    );
    let ok = format!("{BASE}\n[roles.aggregator]\nmodel = \"big\"\n");
    let p = Panel::from_toml_str(&ok, "panel.toml").expect("a declared role");
    assert_eq!(p.role_model(moot::session::event::Role::Aggregator).model.as_deref(), Some("big"));
}

#[test]
fn categorical_dimensions_need_two_distinct_labels() {
    let one = edit("key = \"accuracy\"", "key = \"accuracy\"\nlabels = [\"formal\"]");
    assert!(error_of(&one).ends_with("dimensions[1].labels: a categorical dimension needs at least two labels"));
    let twice = edit("key = \"accuracy\"", "key = \"accuracy\"\nlabels = [\"formal\", \"formal\"]");
    assert!(error_of(&twice).ends_with("dimensions[1].labels[1]: duplicate label \"formal\""));
    let ok = edit("key = \"accuracy\"", "key = \"accuracy\"\nlabels = [\"formal\", \"casual\"]");
    assert_eq!(Panel::from_toml_str(&ok, "panel.toml").unwrap().dimensions[1].labels, ["formal", "casual"]);
}

#[test]
fn several_pairwise_votes_at_temperature_zero_are_warned_about() {
    let mut p = Panel::bundled("pairwise-summaries").expect("bundled");
    assert!(p.warnings().is_empty(), "one vote: {:?}", p.warnings());
    p.protocol.settings.insert("votes".into(), panel::SettingValue::Integer(3));
    assert!(p.warnings().is_empty(), "temperature 0.3: {:?}", p.warnings());
    p.generation.temperature = 0.0;
    p.groups[0].agents[1].model.temperature = Some(0.8);
    let w = p.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("votes = 3") && w[0].contains("Fact checker") && !w[0].contains("Commuter"), "{}", w[0]);
}

#[test]
fn collab_eval_takes_a_pairwise_mode() {
    let p = Panel::bundled("pairwise-collab").expect("bundled");
    assert_eq!(p.protocol.kind, Protocol::CollabEval);
    assert!(p.protocol.compares_pairs());
    assert!(!Panel::bundled("summary-collab").unwrap().protocol.compares_pairs());
    let bad =
        format!("{}\n[protocol]\nkind = \"collab-eval\"\nmode = \"pairs\"\n", edit("protocol = \"maj-eval\"\n", ""));
    let e = error_of(&bad);
    assert!(e.contains("mode") && e.contains("scores") && e.contains("pairwise"), "{e}");
}
