//! The persona builder (MAJ-EVAL stage A): documents → stakeholders with
//! checked evidence → consolidated groups → one persona per perspective →
//! a panel file.
//!
//! Every step is an event in the builder's log ([`log`]); what was found and
//! decided is the fold of those events ([`state::BuildState`]). Model calls
//! go through [`call::Ctx::ask`] with a verdict per step ([`verdicts`]), so
//! an unreadable reply is recorded as a failure and never becomes a
//! stakeholder, a group or a persona.

pub mod call;
pub mod docs;
pub mod log;
pub mod panel;
pub mod prompts;
pub mod state;
pub mod verdicts;
pub mod verify;

use std::collections::BTreeSet;
use std::time::Instant;

pub use call::{Ctx, Model};
pub use docs::{Document, read_document};
use log::{BuildEventKind, BuildStatus, DocInfo, Estimate, Step};
use state::{Decision, Group, GroupPerspective, Persona, Perspective, Stakeholder};
use verdicts::{Groups, PersonaVerdict, RawGroup, Stakeholders};

use crate::engine::verdict::Verdict;
use crate::provider::conservative_prompt_tokens;
use crate::session::event::Usage;

/// Characters of document text per extraction request when the model's
/// context does not ask for fewer.
pub const DEFAULT_CHUNK_CHARS: usize = 12_000;

/// How a build runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Document text per extraction request (0: [`chunk_chars_for`] the model).
    pub chunk_chars: usize,
    /// At most this many personas per group.
    pub max_per_group: Option<usize>,
    /// Who set the options (recorded on a cap).
    pub author: String,
    /// Prices of the provider, for the estimate's cost.
    pub prices: Option<crate::provider::pricing::Prices>,
}

/// Characters of document text per request for a model with this context
/// window: what is left after the reply budget and about 1,000 tokens of
/// instructions, at 3 characters a token (the conservative count), capped
/// at [`DEFAULT_CHUNK_CHARS`].
pub fn chunk_chars_for(context: Option<u64>, max_tokens: u32) -> usize {
    match context {
        Some(c) => {
            let room = c.saturating_sub(u64::from(max_tokens) + 1000);
            ((room * 3) as usize).clamp(1500, DEFAULT_CHUNK_CHARS)
        }
        None => DEFAULT_CHUNK_CHARS,
    }
}

/// Perspectives the estimate assumes each document yields (the paper's
/// examples have two to five stakeholders with one to three perspectives).
const PERSPECTIVES_PER_DOC: u64 = 6;

/// Tokens a build of these documents is expected to use: every extraction
/// request counted exactly as it will be sent (conservatively), a
/// consolidation and [`PERSPECTIVES_PER_DOC`] personas a document guessed.
pub fn estimate(task: &str, docs: &[Document], chunk_chars: usize, max_tokens: u32) -> Estimate {
    let instructions = Stakeholders.instructions();
    let mut e = Estimate::default();
    for d in docs {
        let chunks = docs::chunks(d, chunk_chars);
        let parts = chunks.len();
        for c in &chunks {
            e.calls += 1;
            e.input_tokens += conservative_prompt_tokens(&prompts::extract(task, d, c, parts, &instructions));
            e.output_tokens += u64::from(max_tokens);
        }
    }
    let perspectives = PERSPECTIVES_PER_DOC * docs.len() as u64;
    // Consolidation shows every perspective (~60 tokens each); a persona request is ~500 tokens.
    e.calls += 1 + perspectives;
    e.input_tokens += 600 + 60 * perspectives + 500 * perspectives;
    e.output_tokens += u64::from(max_tokens) * (1 + perspectives);
    e
}

/// Run the whole build: read documents are given; everything else is asked
/// of the model and recorded. Returns the error that ended the build, if any.
pub async fn build(ctx: &Ctx, docs: &[Document], options: &Options) -> Result<(), String> {
    let started = Instant::now();
    let m = &ctx.model;
    let chunk_chars = if options.chunk_chars > 0 {
        options.chunk_chars
    } else {
        chunk_chars_for(m.provider.context_window(&m.model), m.max_tokens)
    };
    ctx.log.emit(BuildEventKind::BuildStarted {
        build_id: build_id(),
        task: ctx.task.clone(),
        provider: m.provider.info().name,
        model: m.name(),
        estimate: {
            let mut e = estimate(&ctx.task, docs, chunk_chars, m.max_tokens);
            e.cost = options.prices.as_ref().map(|p| {
                p.cost(&Usage { input_tokens: e.input_tokens, output_tokens: e.output_tokens, ..Usage::default() })
            });
            e
        },
        schema_version: log::BUILD_SCHEMA_VERSION,
        moot_version: env!("CARGO_PKG_VERSION").to_string(),
    });
    let result = run_steps(ctx, docs, options, chunk_chars).await;
    let usage = used(ctx);
    let (status, error) = match &result {
        Ok(()) => (BuildStatus::Completed, None),
        Err(_) if ctx.cancel.is_cancelled() => (BuildStatus::Stopped, Some("stopped".to_string())),
        Err(e) => (BuildStatus::Failed, Some(e.clone())),
    };
    ctx.log.emit(BuildEventKind::BuildEnded {
        status,
        error,
        usage,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    result
}

/// Tokens used so far, from the log's completed calls.
fn used(ctx: &Ctx) -> Usage {
    ctx.log.usage()
}

fn build_id() -> String {
    format!("build-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S"))
}

async fn run_steps(ctx: &Ctx, docs: &[Document], options: &Options, chunk_chars: usize) -> Result<(), String> {
    let mut stakeholders = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        stakeholders.extend(extract(ctx, i, d, chunk_chars).await);
        if ctx.cancel.is_cancelled() {
            return Err("stopped".into());
        }
    }
    if stakeholders.iter().all(|s| s.perspectives.is_empty()) {
        return Err(format!(
            "no stakeholders relevant to the task were found in {} document{}",
            docs.len(),
            if docs.len() == 1 { "" } else { "s" }
        ));
    }
    let groups = consolidate(ctx, &stakeholders).await?;
    if let Some(max) = options.max_per_group {
        for g in &groups {
            if g.perspectives.len() > max {
                ctx.log.emit(BuildEventKind::Decided {
                    decision: Decision::CapGroup { group: g.id.clone(), max: Some(max) },
                    author: options.author.clone(),
                });
            }
        }
    }
    let mut names: Vec<String> = Vec::new();
    let mut written = 0;
    for g in &groups {
        let take = options.max_per_group.unwrap_or(usize::MAX);
        for p in g.perspectives.iter().take(take) {
            if ctx.cancel.is_cancelled() {
                return Err("stopped".into());
            }
            if let Some(persona) = write_persona(ctx, &stakeholders, g, p, &names).await {
                names.push(persona.name.clone());
                written += 1;
            }
        }
    }
    if written == 0 {
        return Err("no persona could be written".into());
    }
    Ok(())
}

/// Extract the stakeholders of one document, part by part, checking every quote.
pub async fn extract(ctx: &Ctx, doc_index: usize, doc: &Document, chunk_chars: usize) -> Vec<Stakeholder> {
    let chunks = docs::chunks(doc, chunk_chars);
    ctx.log.emit(BuildEventKind::DocumentRead {
        doc: doc_index,
        info: DocInfo {
            name: doc.name.clone(),
            path: doc.path.clone(),
            paragraphs: doc.paragraphs.len(),
            chars: doc.chars(),
            chunks: chunks.len(),
            skipped: doc.skipped.clone(),
        },
    });
    let index = verify::Index::new(doc);
    let instructions = Stakeholders.instructions();
    let mut out: Vec<Stakeholder> = Vec::new();
    for chunk in &chunks {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let about = if chunks.len() > 1 {
            format!("{}, part {}/{}", doc.name, chunk.index, chunks.len())
        } else {
            doc.name.clone()
        };
        let messages = prompts::extract(&ctx.task, doc, chunk, chunks.len(), &instructions);
        match ctx.ask(Step::Extract, &about, messages, &Stakeholders).await {
            Ok(raw) => {
                let mut found = Vec::new();
                for r in raw {
                    let id = format!("D{}.S{}", doc_index + 1, out.len() + found.len() + 1);
                    let perspectives = r
                        .perspectives
                        .into_iter()
                        .enumerate()
                        .map(|(k, (text, evidence))| Perspective {
                            id: format!("{id}.P{}", k + 1),
                            check: index.check(&evidence),
                            text,
                            evidence,
                        })
                        .collect();
                    found.push(Stakeholder {
                        id,
                        doc: doc_index,
                        name: r.name,
                        characteristics: r.characteristics,
                        perspectives,
                    });
                }
                ctx.log.emit(BuildEventKind::StakeholdersExtracted {
                    doc: doc_index,
                    chunk: chunk.index,
                    stakeholders: found.clone(),
                });
                out.extend(found);
            }
            Err(error) => {
                ctx.log.emit(BuildEventKind::StepFailed { step: Step::Extract, about, error });
            }
        }
    }
    out
}

/// Group the stakeholders and merge their perspectives.
pub async fn consolidate(ctx: &Ctx, stakeholders: &[Stakeholder]) -> Result<Vec<Group>, String> {
    // One stakeholder (or none) has nothing to be grouped with.
    if stakeholders.len() < 2 {
        let mut groups = Vec::new();
        keep_ungrouped(&mut groups, stakeholders);
        ctx.log.emit(BuildEventKind::GroupsFormed { groups: groups.clone(), left_out: Vec::new() });
        return Ok(groups);
    }
    let sids: BTreeSet<String> = stakeholders.iter().map(|s| s.id.clone()).collect();
    let pids: BTreeSet<String> = stakeholders.iter().flat_map(|s| &s.perspectives).map(|p| p.id.clone()).collect();
    let verdict = Groups { stakeholder_ids: &sids, perspective_ids: &pids };
    let messages = prompts::consolidate(&ctx.task, stakeholders, &verdict.instructions());
    let about = format!("{} stakeholders", stakeholders.len());
    let raw = match ctx.ask(Step::Consolidate, &about, messages, &verdict).await {
        Ok(r) => r,
        Err(error) => {
            ctx.log.emit(BuildEventKind::StepFailed { step: Step::Consolidate, about, error: error.clone() });
            return Err(format!("consolidation failed: {error}"));
        }
    };
    let mut groups = groups_from(raw);
    keep_ungrouped(&mut groups, stakeholders);
    let used: BTreeSet<&String> = groups.iter().flat_map(|g| &g.perspectives).flat_map(|p| &p.sources).collect();
    let left_out = pids.iter().filter(|id| !used.contains(id)).cloned().collect();
    ctx.log.emit(BuildEventKind::GroupsFormed { groups: groups.clone(), left_out });
    Ok(groups)
}

/// Evidence-backed views a model's consolidation forgot are kept: a
/// perspective no group lists joins, unmerged, the group its stakeholder
/// is a member of (or whose perspectives use its stakeholder's others);
/// a stakeholder in no group at all keeps its perspectives as a group of
/// its own.
fn keep_ungrouped(groups: &mut Vec<Group>, stakeholders: &[Stakeholder]) {
    for s in stakeholders {
        let used: BTreeSet<String> =
            groups.iter().flat_map(|g| &g.perspectives).flat_map(|p| &p.sources).cloned().collect();
        let forgotten: Vec<&Perspective> = s.perspectives.iter().filter(|p| !used.contains(&p.id)).collect();
        if forgotten.is_empty() {
            continue;
        }
        let home = groups.iter().position(|g| {
            g.members.contains(&s.id)
                || g.perspectives.iter().flat_map(|p| &p.sources).any(|id| s.perspectives.iter().any(|x| &x.id == id))
        });
        if let Some(h) = home {
            let g = &mut groups[h];
            for p in forgotten {
                let id = format!("{}.P{}", g.id, g.perspectives.len() + 1);
                g.perspectives.push(GroupPerspective { id, text: p.text.clone(), sources: vec![p.id.clone()] });
            }
            if !g.members.contains(&s.id) {
                g.members.push(s.id.clone());
            }
            continue;
        }
        let id = format!("G{}", groups.len() + 1);
        let perspectives = s
            .perspectives
            .iter()
            .enumerate()
            .map(|(k, p)| GroupPerspective {
                id: format!("{id}.P{}", k + 1),
                text: p.text.clone(),
                sources: vec![p.id.clone()],
            })
            .collect();
        groups.push(Group {
            id,
            name: s.name.clone(),
            description: s.characteristics.clone(),
            members: vec![s.id.clone()],
            perspectives,
        });
    }
}

fn groups_from(raw: Vec<RawGroup>) -> Vec<Group> {
    raw.into_iter()
        .enumerate()
        .map(|(i, g)| {
            let id = format!("G{}", i + 1);
            let perspectives = g
                .perspectives
                .into_iter()
                .enumerate()
                .map(|(k, (text, sources))| GroupPerspective { id: format!("{id}.P{}", k + 1), text, sources })
                .collect();
            let mut members: Vec<String> = Vec::new();
            for m in g.members {
                if !members.contains(&m) {
                    members.push(m);
                }
            }
            Group { id, name: g.name, description: g.description, members, perspectives }
        })
        .collect()
}

/// The evidence quotes of a group perspective, each marked when it was not
/// found in its document.
pub fn evidence_lines(stakeholders: &[Stakeholder], p: &GroupPerspective) -> Vec<String> {
    p.sources
        .iter()
        .filter_map(|id| stakeholders.iter().find_map(|s| s.perspectives.iter().find(|x| &x.id == id)))
        .map(|x| {
            if x.check.found {
                format!("\"{}\"", x.evidence)
            } else {
                format!("\"{}\" (not found in its document)", x.evidence)
            }
        })
        .collect()
}

/// Write (or write again) the persona of one group perspective. `taken`:
/// names already used in the panel; a repeated name gets a number.
pub async fn write_persona(
    ctx: &Ctx,
    stakeholders: &[Stakeholder],
    group: &Group,
    p: &GroupPerspective,
    taken: &[String],
) -> Option<Persona> {
    let evidence = evidence_lines(stakeholders, p);
    let messages = prompts::persona(&ctx.task, group, p, &evidence, taken, &PersonaVerdict.instructions());
    let about = format!("{} · {}", group.name, p.id);
    match ctx.ask(Step::Persona, &about, messages, &PersonaVerdict).await {
        Ok(mut persona) => {
            // A name already used gives way to the one offered.
            if taken.contains(&persona.name) {
                persona.name = prompts::name_for(taken);
            }
            let base = persona.name.clone();
            let mut n = 2;
            while taken.contains(&persona.name) {
                persona.name = format!("{base} {n}");
                n += 1;
            }
            ctx.log.emit(BuildEventKind::PersonaWritten { perspective: p.id.clone(), persona: persona.clone() });
            Some(persona)
        }
        Err(error) => {
            ctx.log.emit(BuildEventKind::StepFailed { step: Step::Persona, about, error });
            None
        }
    }
}

/// A count with thousands separated by commas (`12,345`).
pub fn num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::personas::verify::QuoteCheck;

    fn stakeholder(id: &str, name: &str, views: usize) -> Stakeholder {
        Stakeholder {
            id: id.into(),
            doc: 0,
            name: name.into(),
            characteristics: format!("{name} of the study."),
            perspectives: (1..=views)
                .map(|k| Perspective {
                    id: format!("{id}.P{k}"),
                    text: format!("view {k}"),
                    evidence: "a quote".into(),
                    check: QuoteCheck { found: true, similarity: 1.0, paragraph: None, span: None },
                })
                .collect(),
        }
    }

    #[test]
    fn a_stakeholder_consolidation_forgot_becomes_a_group_of_its_own() {
        let all = [
            stakeholder("D1.S1", "Teachers", 2),
            stakeholder("D2.S1", "Parents", 0),
            stakeholder("D3.S1", "Researchers", 2),
        ];
        let mut groups = vec![Group {
            id: "G1".into(),
            name: "Teachers".into(),
            description: String::new(),
            members: vec!["D1.S1".into()],
            perspectives: vec![GroupPerspective {
                id: "G1.P1".into(),
                text: "short".into(),
                sources: vec!["D1.S1.P1".into()],
            }],
        }];
        keep_ungrouped(&mut groups, &all);
        assert_eq!(groups.len(), 2, "the researchers kept as a group, the parents (no views) not");
        let teachers: Vec<(&str, &str)> =
            groups[0].perspectives.iter().map(|p| (p.id.as_str(), p.sources[0].as_str())).collect();
        assert_eq!(teachers, [("G1.P1", "D1.S1.P1"), ("G1.P2", "D1.S1.P2")], "the forgotten view joins its group");
        let g = &groups[1];
        assert_eq!(
            (g.id.as_str(), g.name.as_str(), g.members.clone()),
            ("G2", "Researchers", vec!["D3.S1".to_string()])
        );
        let sources: Vec<&str> = g.perspectives.iter().map(|p| p.sources[0].as_str()).collect();
        assert_eq!(sources, ["D3.S1.P1", "D3.S1.P2"]);
        assert_eq!(g.perspectives[1].id, "G2.P2");
    }
}
