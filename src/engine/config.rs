//! What a run needs: the panel, the item, the participants' bindings, and
//! the limits on what it may spend.

use std::sync::Arc;

use crate::item::Item;
use crate::panel::Panel;
use crate::provider::binding::Bindings;
use crate::provider::retry::RetryPolicy;
use crate::session::event::Usage;

/// Limits on what one session may spend; reaching one stops the debate
/// (like a human stop: turns in flight are cancelled, aggregation still runs)
/// with the reason recorded in `stop_requested` (author `budget`) and
/// `session_ended.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// Input plus output tokens over all calls.
    pub max_tokens_total: Option<u64>,
    /// Cost over all calls, at the providers' configured prices.
    pub max_cost: Option<f64>,
}

impl Budget {
    /// Why `used` has reached this budget, if it has.
    pub fn exceeded(&self, used: &Usage) -> Option<String> {
        self.exceeded_as(used, "budget", "--max-tokens-total", "--max-cost")
    }

    /// No limit set.
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens_total.is_none() && self.max_cost.is_none()
    }

    fn exceeded_as(&self, used: &Usage, what: &str, tokens_flag: &str, cost_flag: &str) -> Option<String> {
        if let Some(max) = self.max_tokens_total
            && used.total() >= max
        {
            return Some(format!("{what}: {} tokens used, limit {max} ({tokens_flag})", used.total()));
        }
        if let (Some(max), Some(cost)) = (self.max_cost, used.cost)
            && cost >= max
        {
            return Some(format!("{what}: cost {cost:.4} reached the limit {max} ({cost_flag})"));
        }
        None
    }
}

/// A budget shared by every session of a batch run (`moot eval
/// --run-max-tokens`, `--run-max-cost`). Each session adds its calls; once
/// the budget is reached, every running session stops its debate after its
/// current turn (aggregation still runs, as with [`Budget`]) and no new item
/// starts.
#[derive(Debug)]
pub struct RunBudget {
    limits: Budget,
    /// Prices for calls whose provider has none configured (`moot eval --price-input/--price-output`).
    fallback: Option<crate::provider::pricing::Prices>,
    used: std::sync::Mutex<Usage>,
}

impl RunBudget {
    pub fn new(limits: Budget, fallback: Option<crate::provider::pricing::Prices>) -> Self {
        Self { limits, fallback, used: std::sync::Mutex::new(Usage::default()) }
    }

    /// Count one call; returns why the run's budget is reached, if it is.
    pub fn add(&self, usage: &Usage) -> Option<String> {
        let mut usage = *usage;
        if usage.cost.is_none() {
            usage.cost = self.fallback.map(|p| p.cost(&usage));
        }
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.add(&usage);
        self.reason(&used)
    }

    /// Why the run's budget is reached, if it is.
    pub fn exceeded(&self) -> Option<String> {
        self.reason(&self.used())
    }

    /// What the run's sessions have used so far.
    pub fn used(&self) -> Usage {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reason(&self, used: &Usage) -> Option<String> {
        self.limits.exceeded_as(used, "run budget", "--run-max-tokens", "--run-max-cost")
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub panel: Arc<Panel>,
    pub item: Item,
    pub session_id: String,
    pub seed: u64,
    pub bindings: Bindings,
    pub retry: RetryPolicy,
    /// Which provider was chosen by default and why (shown in headers).
    pub provider_note: Option<String>,
    /// After aggregation, keep the session open for overrides and ratings until
    /// a `Quit` command arrives or the command channel closes (interactive use).
    pub linger: bool,
    /// Failed turns in a row, within one group, before the run gives up.
    pub max_consecutive_failures: u32,
    /// Spending limits of the session.
    pub budget: Budget,
    /// The budget of the batch run this session belongs to, if any.
    pub run_budget: Option<Arc<RunBudget>>,
    /// Where G-Eval keeps evaluation steps between runs (`None`: written anew each run).
    pub steps_cache: Option<std::path::PathBuf>,
    /// Pairwise, `moot run --blind`: the screen hides the systems' names and
    /// the judges' verdicts until a person has labelled each pair; the run
    /// records the screen order it drew (`blind_order`).
    pub blind: bool,
}

impl EngineConfig {
    pub fn new(panel: Arc<Panel>, item: Item, bindings: Bindings) -> Self {
        let seed = panel.generation.seed.unwrap_or(0);
        Self {
            panel,
            item,
            session_id: crate::session::new_session_id(),
            seed,
            bindings,
            retry: RetryPolicy::default(),
            provider_note: None,
            linger: false,
            max_consecutive_failures: 3,
            budget: Budget::default(),
            run_budget: None,
            steps_cache: None,
            blind: false,
        }
    }
}
